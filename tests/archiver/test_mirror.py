"""The watcher's mirror of a session's messages, folded from ``/event``: the same messages as
the server's export whatever the order of the events, repeats included; spilled sessions read
back identical; what it lacks is said."""

from __future__ import annotations

import json
import random
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tower.mirror import Mirror

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"


def _has_export(path: Path) -> bool:
    d = json.loads(path.read_text())
    return (
        isinstance(d, dict)
        and "events" in d
        and any(isinstance(m, list) for m in (d.get("messages") or {}).values())
    )


# captures of a real server: its events, then its export of each session (deleted_busy has none)
CAPTURES = sorted(p for p in FIXTURES.glob("*.json") if _has_export(p))


def _capture(path: Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    d = json.loads(path.read_text())
    events = [e.get("event", e) for e in d["events"]]
    return events, {s: m for s, m in d["messages"].items() if isinstance(m, list)}


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.stem)
def test_real_capture_gives_the_servers_export_in_any_order(path: Path) -> None:
    events, export = _capture(path)
    assert export, "the capture holds the server's export"
    rnd = random.Random(path.name)
    for _ in range(3):
        shuffled = events + rnd.sample(events, len(events) // 3)
        rnd.shuffle(shuffled)
        m = Mirror()
        for e in shuffled:
            m.on_event(e, 1.0)
        for sid, messages in export.items():
            s = m.session(sid)
            assert s is not None and s.messages() == messages


# -- generated histories --------------------------------------------------------------------
def _history(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A session's events in the order the server published them, and its final export."""
    sid = "ses_a"
    events: list[dict[str, Any]] = [{"type": "session.created", "properties": {"info": {"id": sid}}}]
    export = []
    for m in range(draw(st.integers(1, 4))):
        mid = f"msg_{m:03d}"
        info: dict[str, Any] = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": m}}
        events.append({"type": "message.updated", "properties": {"sessionID": sid, "info": dict(info)}})
        parts = []
        for p in range(draw(st.integers(0, 3))):
            pid = f"prt_{m:03d}_{p}"
            text = ""
            for _ in range(draw(st.integers(0, 3))):  # versions, with pieces streamed between
                for piece in draw(st.lists(st.text("ab ", min_size=1, max_size=3), max_size=3)):
                    events.append(
                        {
                            "type": "message.part.delta",
                            "properties": {
                                "sessionID": sid,
                                "messageID": mid,
                                "partID": pid,
                                "field": "text",
                                "delta": piece,
                            },
                        }
                    )
                    text += piece
                events.append(
                    {
                        "type": "message.part.updated",
                        "properties": {
                            "sessionID": sid,
                            "part": {
                                "id": pid,
                                "sessionID": sid,
                                "messageID": mid,
                                "type": "text",
                                "text": text,
                            },
                        },
                    }
                )
            final = {"id": pid, "sessionID": sid, "messageID": mid, "type": "text", "text": text + "."}
            events.append({"type": "message.part.updated", "properties": {"sessionID": sid, "part": final}})
            parts.append(final)
        info["time"] = {"created": m, "completed": m + 1}
        events.append({"type": "message.updated", "properties": {"sessionID": sid, "info": info}})
        export.append({"info": info, "parts": parts})
    for i, e in enumerate(events):
        e["id"] = f"evt_{i:06d}"
    return events, export


history = st.composite(_history)


@settings(max_examples=100, deadline=None)
@given(history(), st.randoms(use_true_random=False), st.integers(0, 10))
def test_any_order_and_repeats_give_the_export(h: Any, rnd: random.Random, repeats: int) -> None:
    events, export = h
    order = events + [rnd.choice(events) for _ in range(repeats)]
    rnd.shuffle(order)
    m = Mirror()
    for e in order:
        m.on_event(e, 1.0)
    s = m.session("ses_a")
    assert s is not None and s.messages() == export
    assert s.missing() == []


@settings(max_examples=40, deadline=None)
@given(history(), st.integers(0, 400))
def test_spilled_sessions_read_back_identical(tmp_path_factory: Any, h: Any, budget: int) -> None:
    events, export = h
    spill = tmp_path_factory.mktemp("spill")
    m = Mirror(spill, budget_bytes=budget)
    for e in events:
        m.on_event(e, 1.0)
    s = m.session("ses_a")
    assert s is not None and s.messages() == export
    if m.spilled:
        assert m.bytes <= budget
        mode = stat.S_IMODE((spill / "ses_a.jsonl").stat().st_mode)
        assert mode == 0o600


def test_streamed_pieces_of_a_part_in_flight_are_kept_in_order() -> None:
    m = Mirror()
    base = {"id": "prt_1", "sessionID": "ses_a", "messageID": "msg_1", "type": "text", "text": "He"}
    m.on_event(
        {
            "id": "evt_1",
            "type": "message.updated",
            "properties": {"info": {"id": "msg_1", "sessionID": "ses_a"}},
        },
        1,
    )
    m.on_event({"id": "evt_2", "type": "message.part.updated", "properties": {"part": base}}, 1)
    for i, piece in ((4, "lo"), (3, "l"), (4, "lo")):  # out of order, and a repeat
        m.on_event(
            {
                "id": f"evt_{i}",
                "type": "message.part.delta",
                "properties": {
                    "sessionID": "ses_a",
                    "messageID": "msg_1",
                    "partID": "prt_1",
                    "field": "text",
                    "delta": piece,
                },
            },
            1,
        )
    s = m.session("ses_a")
    assert s is not None and s.messages()[0]["parts"][0]["text"] == "Hello"


def test_what_the_mirror_lacks_is_said() -> None:
    m = Mirror()
    # first seen mid-run, a part of an unseen message, pieces of an unseen part, a lost stream
    m.on_event(
        {
            "id": "evt_1",
            "type": "message.part.updated",
            "properties": {
                "part": {
                    "id": "prt_1",
                    "sessionID": "ses_a",
                    "messageID": "msg_0",
                    "type": "text",
                    "text": "x",
                }
            },
        },
        1,
    )
    m.on_event(
        {
            "id": "evt_2",
            "type": "message.part.delta",
            "properties": {
                "sessionID": "ses_a",
                "messageID": "msg_1",
                "partID": "prt_2",
                "field": "text",
                "delta": "y",
            },
        },
        1,
    )
    m.gap("event stream closed by the server", 2)
    s = m.session("ses_a")
    assert s is not None
    said = [(w.error_kind, w.what) for w in s.missing()]
    assert said == [
        ("truncated", "messages"),
        ("missing_meta", "session"),
        ("truncated", "messages"),
        ("truncated", "messages"),
        ("connection", "events"),
    ]
    assert s.messages() == []


def test_a_deleted_tree_is_due_once_and_snapshots_as_a_walk() -> None:
    m = Mirror()
    ev = [
        ("session.created", {"info": {"id": "ses_r"}}),
        ("session.created", {"info": {"id": "ses_c", "parentID": "ses_r"}}),
        ("message.updated", {"info": {"id": "msg_1", "sessionID": "ses_c", "role": "user"}}),
        ("session.deleted", {"info": {"id": "ses_c", "parentID": "ses_r"}}),
        ("session.deleted", {"info": {"id": "ses_r"}}),
    ]
    for i, (kind, props) in enumerate(ev):
        m.on_event({"id": f"evt_{i}", "type": kind, "properties": props}, 10.0)
    assert m.due(10.1) == []  # the grace: children's deletions and last events still come
    assert m.due(11.0) == ["ses_r"]
    assert m.due(12.0) == []
    snap = m.snapshot("ses_r", "http://x")
    assert [(s.session_id, s.parent_id, s.depth) for s in snap.sessions] == [
        ("ses_r", None, 0),
        ("ses_c", "ses_r", 1),
    ]
    assert snap.sessions[1].messages[0]["info"]["id"] == "msg_1"
    assert snap.complete


def test_a_tree_archived_from_the_server_after_its_last_event_is_not_due() -> None:
    m = Mirror()
    m.on_event({"id": "evt_1", "type": "session.created", "properties": {"info": {"id": "ses_r"}}}, 5.0)
    m.archived("ses_r", 6.0)
    m.on_event({"id": "evt_2", "type": "session.deleted", "properties": {"info": {"id": "ses_r"}}}, 7.0)
    assert m.due(9.0) == []  # the deletion itself is no change the archive lacks
    m.on_event({"id": "evt_3", "type": "session.created", "properties": {"info": {"id": "ses_s"}}}, 5.0)
    m.on_event({"id": "evt_4", "type": "session.deleted", "properties": {"info": {"id": "ses_s"}}}, 7.0)
    assert m.due(9.0) == ["ses_s"]  # never archived from the server


@settings(max_examples=100, deadline=None)
@given(history(), st.data())
def test_a_watcher_that_starts_late_fills_from_the_server_and_still_gets_the_export(
    h: Any, data: Any
) -> None:
    """Events before ``c`` were never seen (the watch began later); the server is read after
    ``j`` events arrived and answers its state after ``r`` (at least that new); the rest of the
    stream follows. The mirror wants the session read, and ends with the server's export."""
    events, export = h
    n = len(events)
    c = data.draw(st.integers(1, n), label="first event seen")
    j = data.draw(st.integers(c, n), label="events seen when the read began")
    r = data.draw(st.integers(j, n), label="events in the server's answer")
    truth = Mirror()
    for e in events[:r]:
        truth.on_event(e, 1.0)
    answer = truth.session("ses_a")
    m = Mirror()
    for e in events[c:j]:
        m.on_event(e, 1.0)
    assert m.wanted() == (["ses_a"] if j > c else [])
    m.fill("ses_a", answer.record() if answer else None, answer.messages() if answer else [], m.last_key, 2.0)
    for e in events[j:]:
        m.on_event(e, 3.0)
    s = m.session("ses_a")
    assert s is not None and s.messages() == export and s.missing() == []


def test_a_session_alive_while_the_stream_was_down_is_read_again() -> None:
    m = Mirror()
    base = {"id": "prt_1", "sessionID": "ses_a", "messageID": "msg_1", "type": "text", "text": "a"}
    m.on_event({"id": "evt_1", "type": "session.created", "properties": {"info": {"id": "ses_a"}}}, 1000.0)
    m.on_event({"id": "evt_2", "type": "session.created", "properties": {"info": {"id": "ses_old"}}}, 1.0)
    m.on_event({"id": "evt_3", "type": "message.part.updated", "properties": {"part": base}}, 1000.0)
    m.gap("event stream closed by the server", 1200.0)
    assert m.wanted() == ["ses_a"]  # active lately: read at once; ses_old when it next moves
    s = m.session("ses_a")
    assert s is not None and [w.error_kind for w in s.missing()] == ["truncated", "connection"]
    info = {"id": "msg_1", "sessionID": "ses_a", "role": "user"}
    m.fill("ses_a", {"id": "ses_a"}, [{"info": info, "parts": [{**base, "text": "ab"}]}], m.last_key, 1201.0)
    s = m.session("ses_a")
    assert s is not None and s.missing() == [] and s.messages()[0]["parts"][0]["text"] == "ab"
    m.on_event({"id": "evt_4", "type": "session.updated", "properties": {"info": {"id": "ses_old"}}}, 1300.0)
    assert m.wanted() == ["ses_old"]
