"""Scenario scripts for the fake OpenCode 2 server: what a real server would hold after a run."""

from __future__ import annotations

from fake_server import FakeOpenCode2

SUBAGENT_PREFIX = "You are a subagent spawned by another session."


def subagent_tree(fake: FakeOpenCode2) -> dict[str, str]:
    """A root that spawns a child through `subagent`; the child spawns a grandchild, runs a
    shell and is compacted; a retry and a stored shell on the root. Returns the ids by role."""
    root = fake.session(title="Investigate with subagents", agent="build")
    fake.user(root, "Investigate the repo with subagents.")
    child = fake.session(parent=root, title="Explore level one", agent="general")
    fake.user(child, f"{SUBAGENT_PREFIX}\n\nExplore the repo.")
    grand = fake.session(parent=child, title="Check the README", agent="general")
    fake.user(grand, f"{SUBAGENT_PREFIX}\n\nRead README.md and report.")
    fake.step(
        grand,
        [fake.tool("read", {"path": "/work/project/README.md"}, "a tiny demo repo")],
        finish="tool-calls",
    )
    fake.step(grand, [{"type": "text", "text": "README says it is a tiny demo repo."}])
    fake.idle(grand)
    meta = {"sessionID": grand, "status": "completed", "truncated": False}
    fake.step(
        child,
        [
            fake.tool("shell", {"command": "ls"}, "README.md\ncalc.py", metadata={"exit": 0}),
            fake.tool(
                "subagent",
                {
                    "agent": "general",
                    "description": "Check the README",
                    "prompt": "Read README.md and report.",
                },
                f'<subagent sessionID="{grand}" state="completed">tiny</subagent>',
                metadata=meta,
            ),
        ],
        finish="tool-calls",
    )
    fake.compaction(child, "Explored; README checked by a subagent.")
    fake.step(child, [{"type": "text", "text": "Child: explored."}])
    fake.idle(child)
    fake.step(
        root,
        [],
        finish="error",
        cost=0.0,
        retry={"attempt": 1, "at": 1, "error": {"type": "provider.rate-limit", "message": "429"}},
    )
    fake.step(
        root,
        [
            fake.tool(
                "subagent",
                {"agent": "general", "description": "Explore level one", "prompt": "Explore the repo."},
                f'<subagent sessionID="{child}" state="completed">done</subagent>',
                metadata={"sessionID": child, "status": "completed"},
            )
        ],
        finish="tool-calls",
    )
    fake.shell(root, "git status", "nothing to commit", 0)
    fake.step(root, [{"type": "text", "text": "Root: the subagents finished."}])
    fake.idle(root)
    return {"root": root, "child": child, "grandchild": grand}


def doom_loop(fake: FakeOpenCode2, repeats: int = 8) -> str:
    """The same failing shell command, again and again, in one session."""
    sid = fake.session(title="Fix the tests", agent="build")
    fake.user(sid, "Make the tests pass.")
    for _ in range(repeats):
        call = fake.tool(
            "shell",
            {"command": "pytest -x tests/test_calc.py"},
            "FAILED tests/test_calc.py::test_add - assert 3 == 4",
            metadata={"exit": 1},
        )
        fake.step(sid, [{"type": "text", "text": "Running the tests again."}, call], finish="tool-calls")
    return sid
