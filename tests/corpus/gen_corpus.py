"""Build the generated part of the labelled detector corpus (and large sessions for benchmarks).

Sessions are written in the shape OpenCode's classic routes return (`{info, parts}` messages),
wrapped like a recorded run (`messages`, `status_samples`, `events`, `root_id`), so the corpus
also exercises the converter. Everything is seeded: running this again writes the same bytes.

    python tests/corpus/gen_corpus.py            # rewrite tests/corpus/*.json
    python tests/corpus/gen_corpus.py --check    # exit 1 if a file would change
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from corpus_healthy import (
    gen_flaky_explore,
    gen_long_build,
    gen_long_reasoning,
    gen_many_reads,
    gen_mixed,
    gen_polling,
    gen_recheck,
    gen_test_fix,
    gen_waiting_server,
)
from corpus_session import DENIED, FILES, Session, bash, edit, finish_idle, read, run_busy

HERE = Path(__file__).parent
FIXTURES = HERE.parent / "fixtures" / "opencode"
# --- stuck sessions -----------------------------------------------------------------------


def gen_doom(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"doom_{k}")
    s.user("Fix the failing test.")
    s.step(text="Looking at the repo.", tools=[("read", read("README.md"), ("ok", "# app"))])
    variant = k % 4
    cmd = rng.choice(["git status --short", "pytest -q tests/test_api.py", "ls src"])
    s.begin()
    if variant == 0:  # identical calls and answers (but for timings), text in between now and then
        for i in range(rng.randint(5, 8)):
            out = f"M a.py\n(took {rng.randint(20, 90)} ms)"
            s.step(text="Checking again." if i % 2 else None, tools=[("bash", bash(cmd), ("ok", out))])
    elif variant == 1:  # the same call failing the same way
        for _ in range(rng.randint(3, 5)):
            s.step(
                tools=[
                    ("read", read("src/missing.py"), ("error", "File not found: /work/app/src/missing.py"))
                ]
            )
    elif variant == 2:  # a short cycle A B A B ...
        a, b = (
            ("bash", bash(cmd), ("exit", 1, "1 failed")),
            ("read", read("src/api.py"), ("ok", "def f(): ...")),
        )
        for _ in range(rng.randint(4, 6)):
            s.step(tools=[a])
            s.step(text="Let me look at the code again.", tools=[b])
    else:  # a cycle of three, keys in a different order each time
        for i in range(rng.randint(4, 5)):
            s.step(
                tools=[
                    (
                        "grep",
                        {"pattern": "def main", "path": "src"}
                        if i % 2
                        else {"path": "src", "pattern": "def main"},
                        ("ok", "src/a.py"),
                    )
                ]
            )
            s.step(tools=[("read", read("src/a.py"), ("ok", "..."))])
            s.step(tools=[("bash", bash("python -m app"), ("exit", 2, "usage"))])
    run_busy(s, 4)
    s.step(text="Still failing.")
    finish_idle(s)
    return s, {"label": "doom_loop", "also": ["retry_cascade"] if variant in (1, 2, 3) else []}


def gen_retry(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"retry_{k}")
    s.user("Make the build pass.")
    variant = k % 4
    also: list[str] = []
    s.begin()
    if variant == 0:  # a run of different failing calls
        for i in range(rng.randint(6, 8)):
            s.step(
                tools=[("bash", bash(f"make target{i}"), ("exit", 2, f"make: *** No rule to make target{i}"))]
            )
    elif variant == 1:  # the same error with varying arguments, reads in between
        for i in range(rng.randint(5, 6)):
            s.step(tools=[("read", read("src/app.py"), ("ok", "code"))] if i else [])
            s.step(
                tools=[
                    (
                        "edit",
                        edit("src/app.py", f"old {i}", "new"),
                        ("error", "Could not find oldString in the file. It must match exactly."),
                    )
                ]
            )
        also = ["no_progress"]
    elif variant == 2:  # provider errors, step after step
        for _ in range(rng.randint(3, 4)):
            s.step(error=("APIError", "Service Unavailable"), completed=True, bare=True)
    else:  # retries recorded only in the status history
        s.step(text="Working.", tools=[("bash", bash("ls"), ("ok", "src"))])
        for attempt in range(1, rng.randint(5, 7)):
            for _ in range(rng.randint(3, 6)):
                s.sample("retry", attempt=attempt)
        s.begin()  # the step being retried
    s.step(text="I could not make it work.")
    finish_idle(s)
    return s, {"label": "retry_cascade", "also": also}


def gen_permission(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"perm_{k}")
    s.user("Update the config.")
    variant = k % 5
    s.begin()
    if variant in (0, 1, 2):  # an ask nobody answers
        kind, pats, tool, inp = [
            ("external_directory", ["/etc/*"], "read", {"filePath": "/etc/hosts"}),
            ("read", [".env"], "read", read(".env")),
            ("doom_loop", ["bash"], "bash", bash("npm test")),
        ][variant]
        s.step(text="Reading it.", tools=[(tool, inp, ("running",))], completed=False)
        rid = s.ask(kind, pats, call=f"call_{s._n}")
        for _ in range(rng.randint(150, 250)):  # 37 to 62 s at four polls a second
            s.sample("busy", pending=(rid,))
    elif variant == 3:  # repeated denials
        for i in range(rng.randint(4, 5)):
            s.step(
                tools=[
                    (
                        "bash",
                        bash(f"rm -rf build{i}"),
                        (
                            "error",
                            DENIED,
                        ),
                    )
                ]
            )
        s.step(text="I am not allowed to do that.")
        finish_idle(s)
    else:  # a call left running while the session idles
        s.step(
            text="Running the migration.",
            tools=[("bash", bash("./migrate.sh"), ("running",))],
            completed=False,
        )
        run_busy(s, 5)
        finish_idle(s)
    also = ["retry_cascade"] if variant == 3 else []
    return s, {"label": "permission_deadlock", "also": also}


def gen_empty(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"empty_{k}")
    s.user("Fix the bug.")
    s.step(text="Let me see.", tools=[("read", read("src/bug.py"), ("ok", "x = 1"))])
    s.begin()
    for i in range(rng.randint(5, 8)):
        if (i + k) % 3 == 0:
            s.step(finish="tool-calls", output_tokens=0)
        else:
            s.step(
                reasoning="I should look at the bug. " * rng.randint(1, 4),
                finish="tool-calls",
                output_tokens=4,
            )
    run_busy(s, 3)
    also = ["silent_stop"] if k % 2 else []
    if k % 2:
        s.step(reasoning="Done thinking.", output_tokens=3)
        finish_idle(s)
    else:
        s.step(text="I am not sure how to proceed.")
    return s, {"label": "empty_reasoning", "also": also}


def gen_monologue(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"mono_{k}")
    s.user("Why does the service crash?")
    s.step(text="Checking the logs.", tools=[("bash", bash("tail -n 50 app.log"), ("ok", "panic"))])
    line = rng.choice(
        ["The service crashes because of a nil pointer.", "I need to check the logs again before I answer."]
    )
    s.begin()
    for _ in range(rng.randint(4, 6)):
        s.step(text=line, finish="tool-calls")
    s.step(text=line + "  ")
    finish_idle(s)
    return s, {"label": "monologue", "also": []}


def gen_compaction(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"compact_{k}")
    s.user("Summarise the whole repository.")
    for i in range(rng.randint(3, 4)):
        s.step(tools=[("read", read(FILES[i]), ("ok", "x" * 50))])
        if i == 0:
            s.begin()  # the first step that overflows
        s.step(completed=True, bare=True)
        s.event("session.error", error={"name": "ContextOverflowError", "data": {"message": "too long"}})
        s.user("", compaction=True)
        s.step(text=f"Summary {i}: the repository has many files.", summary=True)
        s.user("The previous request exceeded the provider's size limit.", synthetic=True)
    s.step(text="Continuing.")
    finish_idle(s)
    return s, {"label": "compaction_loop", "also": []}


def gen_silent(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"silent_{k}")
    s.user("Add a health endpoint.")
    s.step(text="Reading the router.", tools=[("read", read("src/router.py"), ("ok", "routes"))])
    s.step(
        tools=[("edit", edit("src/router.py", "routes", "routes + health"), ("ok", "ok"))],
        patch=["src/router.py"],
    )
    run_busy(s, rng.randint(2, 6))
    s.begin()
    s.step(output_tokens=0, finish=rng.choice(["stop", "length", "unknown"]))
    finish_idle(s)
    return s, {"label": "silent_stop", "also": []}


def gen_no_progress(rng: random.Random, k: int) -> tuple[Session, dict[str, Any]]:
    s = Session(f"noprog_{k}")
    s.user("Find out why the cache misses.")
    s.begin()
    pool = [("read", read(f)) for f in FILES[:5]] + [
        ("grep", {"pattern": "cache", "path": "src"}),
        ("bash", bash("git log -3 --oneline")),
    ]
    last: list[int] = []
    for i in range(rng.randint(26, 32)):
        j = rng.choice([x for x in range(len(pool)) if x not in last[-4:]])  # no short cycle
        last.append(j)
        s.step(
            text="Looking further." if i % 5 == 0 else None, tools=[(pool[j][0], pool[j][1], ("ok", "..."))]
        )
    s.step(text="I have not found it yet.")
    finish_idle(s)
    return s, {"label": "no_progress", "also": []}


GENERATORS: dict[str, tuple[Callable[[random.Random, int], tuple[Session, dict[str, Any]]], int]] = {
    "doom": (gen_doom, 8),
    "retry": (gen_retry, 8),
    "perm": (gen_permission, 5),
    "empty": (gen_empty, 4),
    "mono": (gen_monologue, 3),
    "compact": (gen_compaction, 3),
    "silent": (gen_silent, 3),
    "noprog": (gen_no_progress, 3),
    "ok_poll": (gen_polling, 4),
    "ok_build": (gen_long_build, 2),
    "ok_reads": (gen_many_reads, 3),
    "ok_testfix": (gen_test_fix, 3),
    "ok_think": (gen_long_reasoning, 3),
    "ok_mixed": (gen_mixed, 2),
    "ok_server": (gen_waiting_server, 3),
    "ok_explore": (gen_flaky_explore, 3),
    "ok_recheck": (gen_recheck, 2),
}

# Captured runs of a real server, with the label a person gives them.
FIXTURE_LABELS: dict[str, tuple[str, list[str], str]] = {
    "aborted": ("healthy", [], "a person aborted a sleep; nothing stuck"),
    "context_overflow": ("healthy", [], "one overflow, compacted, then the run went on"),
    "deleted_busy": ("healthy", [], "session deleted; no messages left"),
    "deleted_tree": ("healthy", [], ""),
    "doom_loop": ("doom_loop", [], "six identical bash calls in six steps"),
    "doom_loop_guard": ("doom_loop", [], "four identical calls in one step"),
    "doom_loop_rejected": ("doom_loop", ["retry_cascade"], "identical calls, guard rejected"),
    "healthy": ("healthy", [], ""),
    "permission_deadlock": ("permission_deadlock", [], "bash ask never answered"),
    "permission_denied": ("healthy", [], "two denials, then the agent reports and stops"),
    "permission_rejected": ("healthy", [], "one rejection stops the run by design"),
    "reasoning_loop": ("empty_reasoning", ["silent_stop"], "reasoning-only and empty steps"),
    "retry_cascade": ("retry_cascade", [], "503, 429, 503 then success"),
    "secrets": ("healthy", [], ".env ask answered"),
    "subagent_nesting_denied": ("healthy", [], ""),
    "subagent_tree": ("healthy", [], ""),
    "subtask_part": ("healthy", [], ""),
    "tool_errors": ("retry_cascade", [], "a cascade of tool errors, then giving up"),
    "user_parts": ("healthy", [], ""),
}


# Where each stuck fixture's pattern begins (a message index, read off the capture); it lasts
# to the capture's end, where the run stopped or was stopped.
FIXTURE_ONSETS = {
    "doom_loop": 1,  # the first of the identical calls
    "doom_loop_guard": 1,
    "doom_loop_rejected": 1,
    "permission_deadlock": 1,  # the step holding the ask
    "permission_deadlock_midrun": 1,
    "reasoning_loop": 1,  # the first reasoning-only step
    "retry_cascade": 1,  # the step that was retried
    "tool_errors": 2,  # the first failing command
}


def _fixture_span(name: str, doc: dict[str, Any] | None = None) -> dict[str, int]:
    if doc is None:
        doc = json.loads((FIXTURES / f"{name}.json").read_text())
    last = len(doc["messages"][doc["root_id"]]) - 1
    return {"pattern_start": FIXTURE_ONSETS[name], "pattern_end": last}


def _midrun_deadlock() -> dict[str, Any]:
    """permission_deadlock as a live recorder saw it while the ask was pending."""
    full = json.loads((FIXTURES / "permission_deadlock.json").read_text())
    mid = full["midrun"]
    t0 = full["events"][0]["received"]
    cut = t0 + mid["t"] * 1000 + 4000
    return {
        "scenario": "permission_deadlock_midrun",
        "description": "permission_deadlock cut 4 s after the midrun snapshot, ask still pending",
        "root_id": full["root_id"],
        "messages": mid["messages"],
        "status_samples": [x for x in full["status_samples"] if x["t"] <= mid["t"] + 4],
        "events": [e for e in full["events"] if e["received"] <= cut],
    }


def build() -> Iterator[tuple[str, str]]:
    """(file name, content) of every generated corpus file."""
    for prefix, (gen, count) in GENERATORS.items():
        for k in range(count):
            session, label = gen(random.Random(f"{prefix}-{k}"), k)
            label = {"source": "generated", **label}
            if label["label"] != "healthy":  # every generated stall lasts to the session's end
                label |= {"pattern_start": session.onset, "pattern_end": len(session.messages) - 1}
            yield f"{session.name}.json", _dump(session.doc(gen.__doc__ or prefix))
            yield f"{session.name}.label.json", _dump(label)
    for name, (lab, also, note) in FIXTURE_LABELS.items():
        label = {
            "source": f"fixture:{name}",
            "label": lab,
            "also": also,
            "note": note,
            "session": f"../fixtures/opencode/{name}.json",
        }
        if lab != "healthy":
            label |= _fixture_span(name)
        yield f"fx_{name}.label.json", _dump(label)
    yield "fx_permission_deadlock_midrun.json", _dump(_midrun_deadlock())
    label = {
        "source": "fixture:permission_deadlock (midrun)",
        "label": "permission_deadlock",
        "also": [],
        "note": "live view: ask pending, session busy",
        **_fixture_span("permission_deadlock_midrun", _midrun_deadlock()),
    }
    yield "fx_permission_deadlock_midrun.label.json", _dump(label)


def large_session(steps: int, seed: int = 7) -> dict[str, Any]:
    """A long, healthy-looking session for benchmarks: reads, edits, tests, text."""
    rng = random.Random(seed)
    s = Session("bench")
    s.user("Work through the backlog.")
    for i in range(steps):
        r = rng.random()
        f = FILES[rng.randrange(len(FILES))]
        if r < 0.4:
            calls = [
                ("read", read(f), ("ok", "x" * 200)),
                ("grep", {"pattern": f"p{i}", "path": "src"}, ("ok", f)),
            ]
            s.step(
                text="Reading." if i % 3 == 0 else None,
                reasoning="Think." if i % 4 == 0 else None,
                tools=calls,  # type: ignore[arg-type]
            )
        elif r < 0.7:
            s.step(text="Editing.", tools=[("edit", edit(f, f"a{i}", f"b{i}"), ("ok", "ok"))], patch=[f])
        elif r < 0.9:
            s.step(tools=[("bash", bash(f"pytest -q -k t{i % 50}"), ("exit", i % 2, "result"))])
        else:
            s.step(text=f"Progress note {i}.")
    return s.doc("benchmark session")


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name, content in build():
        path = HERE / name
        if path.exists() and path.read_text() == content:
            continue
        stale.append(name)
        if not check:
            path.write_text(content)
    if check and stale:
        print(f"{len(stale)} corpus file(s) out of date: {', '.join(stale[:5])}")
        return 1
    print(f"{'checked' if check else 'wrote'} corpus in {HERE} ({len(stale)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
