"""A message being written is peeked at most once a `PEEK_S` (each peek copies the probe),
yet the board comes back to it on its own: the row shows the newest parts within a second
even when no further event arrives."""

from __future__ import annotations

from typing import Any

import pytest

from tower import live_probe
from tower.live_board import LiveBoard
from tower.live_probe import PEEK_S

SID = "ses_peek000001"


def _ev(kind: str, **props: Any) -> dict[str, Any]:
    return {"type": kind, "properties": {"sessionID": SID, **props}}


def _part(k: int) -> dict[str, Any]:
    return _ev(
        "message.part.updated",
        part={"id": f"prt_{k:04d}", "messageID": "msg_0002", "type": "text", "text": "x"},
    )


def test_parts_of_a_message_in_flight_are_peeked_at_most_once_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    peeks: list[float] = []
    clock = [1000.0]
    real = live_probe.Probe.peek

    def counting(self: Any, msg: Any, **kw: Any) -> Any:
        peeks.append(clock[0])
        return real(self, msg, **kw)

    monkeypatch.setattr(live_probe.Probe, "peek", counting)
    board = LiveBoard("http://oc")
    board.on_event(_ev("session.status", status={"type": "busy"}), clock[0])
    board.on_event(_ev("message.updated", info={"id": "msg_0001", "role": "user"}), clock[0])
    board.on_event(_ev("message.updated", info={"id": "msg_0002", "role": "assistant"}), clock[0])
    assert [r.session_id for r in board.snapshot(clock[0])] == [SID]
    assert len(peeks) == 1
    # 50 parts a second for 0.9 s, a snapshot every 0.1 s: rows, but no new peek
    for k in range(45):
        clock[0] += 0.02
        board.on_event(_part(k), clock[0])
        if k % 5 == 4:
            assert [r.session_id for r in board.snapshot(clock[0])] == [SID]
    assert len(peeks) == 1
    # the stream pauses: the board still comes back to the held-back findings once PEEK_S passed
    clock[0] = peeks[0] + PEEK_S
    assert [r.session_id for r in board.snapshot(clock[0])] == [SID]
    assert len(peeks) == 2
    clock[0] += 0.1
    assert board.snapshot(clock[0]) == []  # caught up: nothing more to write
    # a completed message is scored at once, without waiting out the second
    done = {"id": "msg_0002", "role": "assistant", "time": {"created": 1, "completed": 2}}
    board.on_event(_ev("message.updated", info=done), clock[0])
    board.on_event(_ev("message.updated", info={"id": "msg_0003", "role": "assistant"}), clock[0])
    assert [r.session_id for r in board.snapshot(clock[0])] == [SID]
    assert len(peeks) == 3
