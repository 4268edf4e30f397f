"""OpenCode 2's ``/api/event`` frames read as the tower's 1.x events (`tower.events_v2`): each
live state the board shows, from V2 frames alone; unknown or malformed frames never raise."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tower.events_v2 import MAX_KEPT, V2Decoder, v1_message
from tower.live import Facts, apply, derive
from tower.live_board import LiveBoard
from tower.mirror import Mirror

SID, CHILD = "ses_0000000009999Fk", "ses_0000000009998Fk"
MID = "msg_000000000100"
_n = iter(range(10_000, 10**9))


def frame(type_: str, **data: Any) -> dict[str, Any]:
    return {"id": f"evt_{next(_n):012d}", "created": 1_800_000_000_000, "type": type_, "data": data}


def board_state(*frames: dict[str, Any], sid: str = SID) -> Any:
    dec, f = V2Decoder(), Facts()
    for fr in frames:
        for ev in dec.decode(fr):
            if ev["properties"].get("sessionID", sid) == sid:
                apply(f, ev, 1000.0)
    return derive(f)


def test_an_execution_is_busy_then_idle() -> None:
    started = frame("session.execution.started", sessionID=SID)
    assert board_state(started).state == "busy"
    assert board_state(started, frame("session.execution.succeeded", sessionID=SID)).state == "idle"


def test_a_retry_scheduled_names_its_attempt_and_next_time() -> None:
    err = {"type": "provider.rate-limit", "message": "429 Too Many Requests"}
    st_ = board_state(
        frame("session.execution.started", sessionID=SID),
        frame(
            "session.retry.scheduled",
            sessionID=SID,
            assistantMessageID=MID,
            attempt=3,
            at=1_800_000_060_000,
            error=err,
        ),
    )
    assert (st_.state, st_.attempt, st_.next_try) == ("retrying", 3, 1_800_000_060.0)
    assert "429" in st_.reason


def test_retries_exhausted_and_failed_is_an_outcome_not_a_retry() -> None:
    err = {"type": "provider.rate-limit", "message": "429"}
    st_ = board_state(
        frame("session.execution.started", sessionID=SID),
        frame("session.retry.scheduled", sessionID=SID, assistantMessageID=MID, attempt=5, at=1, error=err),
        frame("session.execution.failed", sessionID=SID, error=err),
    )
    assert st_.state == "errored" and st_.reason.startswith("provider.rate-limit")


def test_an_interrupt_is_interrupted() -> None:
    st_ = board_state(
        frame("session.execution.started", sessionID=SID),
        frame("session.execution.interrupted", sessionID=SID, reason="user"),
    )
    assert st_.state == "interrupted" and "user" in st_.reason


def test_a_permission_ask_and_a_form_wait_on_a_person() -> None:
    ask = frame(
        "permission.asked",
        id="per_000000000200",
        sessionID=SID,
        action="shell",
        resources=["rm -rf build"],
        source={"type": "tool", "messageID": MID, "id": "call_1"},
    )
    st_ = board_state(frame("session.execution.started", sessionID=SID), ask)
    assert st_.state == "waiting_permission" and st_.ask is not None
    assert (st_.ask.permission, st_.ask.patterns, st_.ask.call_id) == ("shell", ("rm -rf build",), "call_1")
    replied = frame("permission.replied", sessionID=SID, requestID="per_000000000200", reply="once")
    assert board_state(frame("session.execution.started", sessionID=SID), ask, replied).state == "busy"
    form = frame(
        "form.created", form={"id": "frm_000000000300", "sessionID": SID, "title": "Which DB?", "fields": []}
    )
    st_ = board_state(frame("session.execution.started", sessionID=SID), form)
    assert st_.state == "waiting_permission" and st_.ask is not None and st_.ask.permission == "form"
    gone = frame("form.cancelled", id="frm_000000000300", sessionID=SID)
    assert board_state(frame("session.execution.started", sessionID=SID), form, gone).state == "busy"


def test_compacting_and_running_a_tool() -> None:
    go = frame("session.execution.started", sessionID=SID)
    assert (
        board_state(go, frame("session.compaction.started", sessionID=SID, reason="auto")).state
        == "compacting"
    )
    assert (
        board_state(
            go,
            frame("session.compaction.started", sessionID=SID, reason="auto"),
            frame("session.compaction.ended", sessionID=SID, reason="auto", text="sum"),
        ).state
        == "busy"
    )
    called = frame(
        "session.tool.called", sessionID=SID, assistantMessageID=MID, id="call_9", input={"command": "ls"}
    )
    named = frame(
        "session.tool.input.started", sessionID=SID, assistantMessageID=MID, id="call_9", name="shell"
    )
    st_ = board_state(go, named, called)
    assert st_.state == "running_tool" and st_.tool is not None and st_.tool.tool == "shell"
    done = frame("session.tool.success", sessionID=SID, assistantMessageID=MID, id="call_9", content=[])
    assert board_state(go, named, called, done).state == "busy"


def test_a_step_builds_the_message_the_mirror_keeps() -> None:
    dec, mirror = V2Decoder(), Mirror()
    frames = [
        frame("session.created", sessionID=SID, projectID="p", location={"directory": "/w"}, version="2.1.2"),
        frame(
            "session.step.started",
            sessionID=SID,
            assistantMessageID=MID,
            agent="build",
            model={"id": "m", "providerID": "p"},
            started=5,
        ),
        frame("session.text.started", sessionID=SID, assistantMessageID=MID, ordinal=0),
        frame("session.text.delta", sessionID=SID, assistantMessageID=MID, ordinal=0, delta="Hel"),
        frame("session.text.ended", sessionID=SID, assistantMessageID=MID, ordinal=0, text="Hello"),
        frame("session.tool.input.started", sessionID=SID, assistantMessageID=MID, id="call_1", name="shell"),
        frame(
            "session.tool.called", sessionID=SID, assistantMessageID=MID, id="call_1", input={"command": "ls"}
        ),
        frame(
            "session.tool.success",
            sessionID=SID,
            assistantMessageID=MID,
            id="call_1",
            content=[{"type": "text", "text": "a.py"}],
            metadata={"exit": 0},
        ),
        frame(
            "session.step.ended",
            sessionID=SID,
            assistantMessageID=MID,
            finish="tool-calls",
            cost=0.5,
            tokens={"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 1, "write": 0}},
        ),
    ]
    for fr in frames:
        for ev in dec.decode(fr):
            mirror.on_event(ev, 1.0)
    s = mirror.session(SID)
    assert s is not None and s.record() is not None and s.record()["directory"] == "/w"  # type: ignore[index]
    (msg,) = s.messages()
    assert (
        msg["info"]["cost"] == 0.5
        and msg["info"]["finish"] == "tool-calls"
        and msg["info"]["role"] == "assistant"
    )
    text, tool = msg["parts"]
    assert text["text"] == "Hello"
    assert (
        tool["tool"] == "shell"
        and tool["state"]["status"] == "completed"
        and tool["state"]["output"] == "a.py"
    )
    assert not dec.messages  # a step ended is forgotten: nothing more comes for it


def test_a_deleted_root_deletes_what_the_decoder_knows_under_it() -> None:
    dec = V2Decoder()
    dec.decode(frame("session.created", sessionID=SID))
    dec.decode(frame("session.created", sessionID=CHILD, parentID=SID))
    gone = dec.decode(frame("session.deleted", sessionID=SID))
    assert [e["properties"]["sessionID"] for e in gone] == [SID, CHILD]
    assert len({e["id"] for e in gone}) == 2  # distinct ids: neither hides the other


def test_unknown_frames_are_ignored_and_counted() -> None:
    dec = V2Decoder()
    assert dec.decode(frame("session.teleported", sessionID=SID)) == []
    assert dec.decode({"type": "vcs.branch.updated", "data": {}}) == []
    assert dec.ignored == 2
    board = LiveBoard("http://x")
    for ev in dec.decode(frame("server.connected")):
        board.on_event(ev, 1.0)


def test_a_stored_v2_message_reads_as_the_same_parts() -> None:
    msg = {
        "id": MID,
        "type": "assistant",
        "agent": "build",
        "model": {"id": "m", "providerID": "p"},
        "content": [
            {"type": "text", "text": "hi"},
            {
                "type": "tool",
                "id": "c",
                "name": "read",
                "state": {"status": "error", "input": {}, "error": {"message": "no"}},
            },
        ],
        "time": {"created": 1, "completed": 2},
    }
    out = v1_message(msg, SID)
    assert out is not None and [p["type"] for p in out["parts"]] == ["text", "tool"]
    assert out["parts"][1]["state"] == {
        "status": "error",
        "input": {},
        "time": {"start": None},
        "error": "no",
    }
    assert v1_message({"id": "msg_1", "type": "idle", "outcome": "succeeded"}, SID) is None


def test_what_it_keeps_is_bounded() -> None:
    dec = V2Decoder()
    for i in range(MAX_KEPT + 50):
        dec.decode(frame("session.step.started", sessionID=SID, assistantMessageID=f"msg_{i:012d}"))
    assert len(dec.messages) == MAX_KEPT


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)
_types = st.sampled_from(
    [
        "session.created",
        "session.deleted",
        "session.execution.failed",
        "session.retry.scheduled",
        "session.status",
        "permission.asked",
        "form.created",
        "session.tool.success",
        "session.text.delta",
        "session.step.ended",
        "session.inbox.enqueued",
        "session.compaction.started",
        "x",
    ]
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        _json
        | st.fixed_dictionaries(
            {
                "type": _types,
                "data": st.dictionaries(
                    st.sampled_from(
                        [
                            "sessionID",
                            "assistantMessageID",
                            "id",
                            "form",
                            "error",
                            "status",
                            "item",
                            "attempt",
                            "at",
                            "content",
                            "parentID",
                            "ordinal",
                            "delta",
                            "text",
                            "input",
                            "name",
                        ]
                    ),
                    _json,
                    max_size=6,
                ),
            }
        ),
        max_size=12,
    )
)
def test_no_json_makes_it_raise(frames: list[Any]) -> None:
    dec, f, board, mirror = V2Decoder(), Facts(), LiveBoard("http://x"), Mirror()
    for fr in frames:
        for ev in dec.decode(fr):
            assert isinstance(ev["type"], str) and isinstance(ev["properties"], dict)
            apply(f, ev, 1.0)
            board.on_event(ev, 1.0)
            mirror.on_event(ev, 1.0)
    derive(f)
