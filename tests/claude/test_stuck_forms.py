"""The Claude forms of stuck runs users published, and the healthy runs that looked stuck: a
permission refused again and again, a turn that announces work and ends until a person types
"proceed", and sidechains kept inline in the main file judged as their own sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from claude_lines import assistant, tool_result, tool_use, user, write
from hypothesis import given
from hypothesis import strategies as st

import detectors
from archiver.claude.convert import from_claude
from archiver.claude.loading import tree_of_file
from detectors import Finding

SID = "5b0c1e9a-0000-4000-8000-000000000001"
REFUSED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a "
    "file edit, the new_string was NOT written to the file). STOP what you are doing and wait for the "
    "user to tell you how to proceed."
)
CLASSIFIER = "Permission for this action was denied. Reason: the action is outside the task's scope."


def _found(lines: list[dict[str, Any]], tmp: Path) -> dict[str, Finding]:
    tree = tree_of_file(write(tmp / "s.jsonl", lines))
    c = from_claude(tree.sessions[0].messages)
    return {f.detector: f for f in detectors.score(c.messages, include_healthy=True)}


def _refusals(n: int, text: str) -> list[dict[str, Any]]:
    lines = [user(SID, "Deploy the branch.")]
    for i in range(n):
        lines += assistant(SID, f"msg_{i}", [tool_use(f"toolu_{i}", command=f"git push origin b{i}")])
        lines.append(user(SID, tool_result(f"toolu_{i}", text, error=True)))
    return lines


@given(st.integers(min_value=4, max_value=9), st.sampled_from([REFUSED, CLASSIFIER]))
def test_calls_refused_again_and_again_are_a_permission_deadlock(n: int, text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        found = _found(_refusals(n, text), Path(d))
    f = found["permission_deadlock"]
    assert f.verdict == "stuck" and f.evidence["signal"] == "denials" and f.evidence["count"] == n
    named = detectors.dominant(found.values())
    assert named is not None and named.detector == "permission_deadlock"


def test_one_refusal_then_other_work_is_healthy(tmp_path: Path) -> None:
    lines = _refusals(1, REFUSED)
    lines += assistant(SID, "msg_x", [tool_use("toolu_x", command="git status")])
    lines.append(user(SID, tool_result("toolu_x", "clean")))
    lines += assistant(SID, "msg_y", [{"type": "text", "text": "Pushed nothing; the tree is clean."}])
    assert detectors.worst_verdict(_found(lines, tmp_path).values()) == "healthy"


def _announcing(times: int) -> list[dict[str, Any]]:
    lines = [user(SID, "Fix the failing parser test.")]
    for i in range(times):
        lines += assistant(
            SID, f"msg_a{i}", [{"type": "text", "text": "I found the cause. Let me fix it now."}]
        )
        lines.append(user(SID, "proceed"))
    lines += assistant(SID, "msg_end", [{"type": "text", "text": "Now let me run the tests:"}])
    return lines


def test_a_turn_that_announces_work_and_ends_twice_is_a_silent_stop(tmp_path: Path) -> None:
    f = _found(_announcing(2), tmp_path)["silent_stop"]
    assert f.verdict == "stuck" and f.evidence["signal"] == "announced"
    assert f.evidence["nudged"] == 2 and f.evidence["count"] == 3


def test_let_me_know_at_the_end_is_no_announcement(tmp_path: Path) -> None:
    lines = [user(SID, "Explain the parser.")]
    text = "The parser reads tokens in one pass. Let me know if you want more detail."
    lines += assistant(SID, "msg_1", [{"type": "text", "text": text}])
    assert _found(lines, tmp_path)["silent_stop"].verdict == "healthy"


def test_inline_sidechains_are_sessions_of_their_own(tmp_path: Path) -> None:
    """A build that failed four times and was then fixed, inside an inline sidechain, does not
    make the main session stuck; the sidechain, judged on its own, is not stuck either."""
    main: list[dict[str, Any]] = [user(SID, "Build it.", isSidechain=False)]
    main += assistant(
        SID, "msg_m1", [tool_use("toolu_t", "Task", prompt="Make the build pass.")], isSidechain=False
    )
    side: list[dict[str, Any]] = []
    first = user(SID, "Make the build pass.", isSidechain=True, agentId="a1b2c3")
    side.append(first)
    parent = first["uuid"]
    for i in range(5):
        ok = i == 4
        out = "Build succeeded" if ok else "error TS2304: Cannot find name 'Parser'.\nExit code 2"
        if i:
            edit = assistant(
                SID,
                f"msg_e{i}",
                [
                    tool_use(
                        f"toolu_e{i}", "Edit", file_path="src/a.ts", old_string=f"x{i}", new_string=f"y{i}"
                    )
                ],
                isSidechain=True,
                agentId="a1b2c3",
            )
            side += edit
            side.append(user(SID, tool_result(f"toolu_e{i}", "ok"), isSidechain=True, agentId="a1b2c3"))
        side += assistant(
            SID,
            f"msg_b{i}",
            [tool_use(f"toolu_b{i}", command="npm run build")],
            isSidechain=True,
            agentId="a1b2c3",
        )
        side.append(
            user(SID, tool_result(f"toolu_b{i}", out, error=not ok), isSidechain=True, agentId="a1b2c3")
        )
    for ln in side[1:]:
        ln["parentUuid"], parent = parent, ln["uuid"]
    done = user(SID, tool_result("toolu_t", "The build passes."), isSidechain=False)
    tail = assistant(SID, "msg_m2", [{"type": "text", "text": "The build passes now."}], isSidechain=False)
    tree = tree_of_file(write(tmp_path / "s.jsonl", [*main, *side, done, *tail]))
    assert [s.depth for s in tree.sessions] == [0, 1]
    root, chain = tree.sessions
    assert not any("npm run build" in str(m) for m in root.messages)
    for s in (root, chain):
        c = from_claude(s.messages)
        assert detectors.worst_verdict(detectors.score(c.messages)) == "healthy", s.session_id
