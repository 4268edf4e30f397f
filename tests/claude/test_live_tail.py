"""A Claude Code transcript read as it grows: however its bytes arrive, the live tail counts
what the archive's reader counts over the whole file, and names the state the lines say."""

from __future__ import annotations

import pytest
from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, usage, user
from hypothesis import given, settings
from hypothesis import strategies as st

from archiver.claude.lines import read_lines
from archiver.claude.messages import build_messages
from tower.claude_board import ClaudeBoard, parse_agents
from tower.claude_tail import AgentSeen, ClaudeTail, derive, totals

SID = "11111111-2222-4333-8444-555555555555"


def _fixture(name: str) -> bytes:
    (path,) = (FIXTURES / name / "json").rglob("*.jsonl")
    return path.read_bytes()


def _whole(data: bytes) -> tuple[dict[str, int], float, int]:
    msgs = build_messages(read_lines(data).objects, SID).messages
    return totals(msgs)


FILES = [_fixture("b_bash_tool"), _fixture("c_doom_loop"), _fixture("e_retry_529")]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(range(len(FILES))), st.lists(st.floats(0, 1), max_size=12))
def test_any_split_of_the_bytes_counts_what_the_whole_file_counts(which: int, cuts: list[float]) -> None:
    data = FILES[which]
    at = sorted({int(c * len(data)) for c in cuts} | {len(data)})
    tail, got = ClaudeTail(SID, "t.jsonl"), 0
    for t, end in enumerate(at):
        # the watcher reads from where the last whole line ended up to the file's size now
        tail.feed(data[tail.offset : end], float(t))
        got = tail.offset
    assert got == len(data)
    assert totals(tail.messages) == _whole(data)
    assert derive(tail.messages) == derive(build_messages(read_lines(data).objects, SID).messages)


def test_a_line_cut_short_waits_for_its_newline() -> None:
    line = jsonl([user(SID, "hello there")])
    tail = ClaudeTail(SID, "t.jsonl")
    assert tail.feed(line[:-10], 1.0) == 0 and tail.offset == 0
    tail.feed(line[tail.offset :], 2.0)
    assert tail.offset == len(line) and derive(tail.messages).state == "busy"


def _states(lines: list[dict[str, object]], agent: AgentSeen | None = None) -> str:
    tail = ClaudeTail(SID, "t.jsonl")
    tail.feed(jsonl(lines), 1.0)
    return derive(tail.messages, agent).state


def test_each_step_of_a_turn_is_named() -> None:
    ask = user(SID, "run the tests")
    call = assistant(SID, "msg_1", [{"type": "text", "text": "Running."}, tool_use("tu_1", command="pytest")])
    for line in call:
        line["message"]["stop_reason"] = "tool_use"  # type: ignore[index]
    result = user(SID, tool_result("tu_1", "3 passed"))
    done = assistant(SID, "msg_2", [{"type": "text", "text": "All pass."}], use=usage(200, 20))
    done[0]["message"]["stop_reason"] = "end_turn"  # type: ignore[index]
    assert _states([ask]) == "busy"
    assert _states([ask, *call]) == "running_tool"
    waiting = AgentSeen(SID, "waiting", "permission")
    assert _states([ask, *call], waiting) == "waiting_permission"
    assert _states([ask, *call, result]) == "busy"
    assert _states([ask, *call, result, *done]) == "idle"
    assert _states([ask, *call, result, user(SID, "[Request interrupted by user]")]) == "interrupted"


def test_the_cli_waiting_with_no_call_open_still_needs_input() -> None:
    got = derive(ClaudeTail(SID, "t").messages, AgentSeen(SID, "waiting", "elicitation dialog"))
    assert (got.state, got.permission, got.patterns) == (
        "waiting_permission",
        "dialog",
        ("elicitation dialog",),
    )
    assert got.reason == "needs input: elicitation dialog"


def test_a_question_to_the_user_needs_input_without_the_cli() -> None:
    q = tool_use("tu_9", name="AskUserQuestion", questions=[{"question": "Which database?"}])
    tail = ClaudeTail(SID, "t.jsonl")
    tail.feed(jsonl([user(SID, "set it up"), *assistant(SID, "msg_1", [q])]), 1.0)
    st_ = derive(tail.messages)
    assert st_.state == "waiting_permission" and st_.permission == "question"
    assert st_.patterns == ("Which database?",) and st_.request_id == "tu_9"


def test_the_board_reports_only_sessions_that_moved() -> None:
    board = ClaudeBoard("claude-code:/c", lambda _m: [])
    board.feed(SID, "t.jsonl", jsonl([user(SID, "hi")]), 1.0)
    (row,) = board.snapshot(1.0)
    assert row.state == "busy" and row.title == "hi" and row.server == "claude-code:/c"
    assert board.snapshot(2.0) == []
    board.on_agents({SID: AgentSeen(SID, "waiting", "permission")})
    (row,) = board.snapshot(3.0)  # no call open: a dialog the lines do not show
    assert (row.state, row.permission, row.previous_state) == ("waiting_permission", "dialog", "busy")
    assert board.active() == [SID]


def test_agents_json_of_cli_2_1_328() -> None:
    text = (
        b'[{"pid": 41, "cwd": "/w", "kind": "interactive", "startedAt": 1, "sessionId": "a",'
        b' "status": "waiting", "waitingFor": "permission"},'
        b' {"id": "j", "kind": "background", "sessionId": "b", "state": "blocked"}, 7]'
    )
    got = parse_agents(text)
    assert got["a"] == AgentSeen("a", "waiting", "permission", 41, None)
    assert got["b"].status == "waiting"
    with pytest.raises(ValueError):
        parse_agents(b"error: unknown command 'agents'")


# A turn as a person sees it: each step and the state it leaves the session in.
_STEPS = st.lists(
    st.sampled_from(["prompt", "call", "calls", "question", "result", "answer", "stop", "retry"]), max_size=14
)


@settings(max_examples=150, deadline=None)
@given(_STEPS, st.sampled_from([None, "busy", "idle", "waiting"]))
def test_the_state_is_the_one_the_last_step_leaves(steps: list[str], status: str | None) -> None:
    lines: list[dict[str, object]] = []
    open_calls: list[str] = []
    question = False
    want = "idle"
    for i, step in enumerate(steps):
        if step in ("call", "calls", "question"):
            ids = [f"tu_{i}_{k}" for k in range(2 if step == "calls" else 1)]
            name = "AskUserQuestion" if step == "question" else "Bash"
            blocks = [tool_use(c, name=name, command="make") for c in ids]
            answer = assistant(SID, f"msg_{i}", blocks)
            for ln in answer:
                ln["message"]["stop_reason"] = "tool_use"  # type: ignore[index]
            lines += answer
            open_calls, question = ids, step == "question"
            want = "waiting_permission" if question else "running_tool"
        elif step == "result" and open_calls:
            lines.append(user(SID, tool_result(open_calls.pop(0), "ok")))
            want = "busy" if not open_calls else want
            question = question and bool(open_calls)
        elif step == "result":
            continue
        else:
            open_calls, question = [], False
            if step == "prompt":
                lines.append(user(SID, f"do step {i}"))
                want = "busy"
            elif step == "answer":
                done = assistant(SID, f"msg_{i}", [{"type": "text", "text": "Done."}])
                done[0]["message"]["stop_reason"] = "end_turn"  # type: ignore[index]
                lines += done
                want = "idle"
            elif step == "stop":
                lines.append(user(SID, "[Request interrupted by user]"))
                want = "interrupted"
            else:
                err = {
                    "type": "system",
                    "subtype": "api_error",
                    "uuid": f"e{i}",
                    "retryAttempt": 2,
                    "error": {"message": "Overloaded"},
                    "timestamp": "2026-11-30T10:00:02.000Z",
                }
                lines.append(err)
                want = "retrying"
    agent = AgentSeen(SID, status) if status is not None else None
    if status == "waiting":
        want = "waiting_permission"  # the CLI's word for what no line shows, or a prompt on the call
    elif status == "busy" and not lines:
        want = "busy"  # started, nothing written yet
    tail = ClaudeTail(SID, "t.jsonl")
    tail.feed(jsonl(lines), 1.0)
    got = derive(tail.messages, agent)
    assert got.state == want, (steps, status, got)
    if got.state == "running_tool":
        assert got.tool == "Bash" and got.request_id is None
    if got.state == "waiting_permission" and open_calls:
        assert got.request_id == open_calls[0]


def test_a_session_that_keeps_writing_is_rescored_every_few_seconds_not_every_line() -> None:
    from tower.claude_board import RESCORE_S

    scored: list[int] = []
    board = ClaudeBoard("claude-code:/c", lambda m: scored.append(len(m)) or [])
    board.feed(SID, "t", jsonl([user(SID, "go")]), 0.0)
    board.snapshot(0.0)
    for i in range(1, 4):  # more of the same state: busy
        board.feed(SID, "t", jsonl([user(SID, tool_result(f"x{i}", "ok"))]), float(i) / 10)
        board.snapshot(float(i) / 10)
    assert scored == [1]
    (row,) = board.snapshot(RESCORE_S)  # due: the findings catch up with nothing new written
    assert scored == [1, 4] and row.state == "busy"
    call = assistant(SID, "m", [tool_use("tu", command="make")])
    board.feed(SID, "t", jsonl(call), RESCORE_S + 0.1)
    board.snapshot(RESCORE_S + 0.1)  # a new state is scored at once
    assert scored == [1, 4, 5]


def test_the_board_hands_out_each_changed_message_and_keeps_the_newest_200() -> None:
    board = ClaudeBoard("claude-code:/c", lambda _m: [])
    board.feed(SID, "t", jsonl([user(SID, f"p{i}") for i in range(205)]), 1.0)
    first = board.messages()
    assert [m.position for m in first.upserts] == list(range(5, 205))
    assert board.messages().upserts == []  # nothing changed since
    half = assistant(SID, "msg_a", [{"type": "text", "text": "one"}, tool_use("tu", command="make")])
    board.feed(SID, "t", jsonl(half[:1]), 2.0)
    (m,) = board.messages().upserts
    assert (m.position, m.message_id, m.completed) == (205, "msg_a", False)  # still being written
    board.feed(SID, "t", jsonl(half[1:]), 3.0)
    got = board.messages()
    (m,) = got.upserts  # the same answer again, with its second block: one message, not two
    assert (m.message_id, len(m.body["parts"])) == ("msg_a", 2)
    assert got.deletes == [] and first.deletes[-1][0] == SID
