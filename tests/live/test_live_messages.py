"""A live session's messages so far: handed to the store as they change (a finished message
once, one being written at most every few seconds), bounded per session, redacted before they
are stored, cleared when the tree is archived or forgotten; on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.client import OpenCodeClient
from archiver.redact import Redactor
from telemetry.queries.live_messages import live_message_page
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveMessage
from telemetry.tower.live import forget_live
from telemetry.tower.live_messages import store_live_messages
from tower.live_messages import (
    MAX_MESSAGE_BYTES,
    MAX_MESSAGES,
    WRITE_EVERY_S,
    LiveMessages,
    MessageBatch,
    bound_body,
)
from tower.mirror import Mirror
from tower.watch import WatchConfig, Watcher

SID = "ses_live"
SECRET = "hunter2-very-secret-value"
SERVER = "http://oc:4096"


def _ev(kind: str, **props: Any) -> dict[str, Any]:
    return {"type": kind, "properties": {"sessionID": SID, **props}}


def _info(mid: str, role: str = "assistant", done: bool = False) -> dict[str, Any]:
    t = {"created": 1_000, **({"completed": 2_000} if done else {})}
    return {"id": mid, "sessionID": SID, "role": role, "time": t}


def _part(mid: str, pid: str, text: str) -> dict[str, Any]:
    return {"id": pid, "messageID": mid, "sessionID": SID, "type": "text", "text": text}


def _ids(batch: MessageBatch) -> list[str]:
    return [m.message_id for m in batch.upserts]


def test_a_finished_message_is_written_once_and_one_being_written_at_most_every_few_seconds() -> None:
    mirror = Mirror()
    live = LiveMessages(mirror)
    mirror.on_event(_ev("message.updated", info=_info("msg_01", "user")), 0.0)
    mirror.on_event(_ev("message.part.updated", part=_part("msg_01", "prt_01", "Push the branch.")), 0.0)
    mirror.on_event(_ev("message.updated", info=_info("msg_02")), 0.1)
    mirror.on_event(_ev("message.part.updated", part=_part("msg_02", "prt_02", "Push")), 0.2)
    first = live.take(0.5)
    assert _ids(first) == ["msg_01", "msg_02"]
    assert first.upserts[0].body["parts"][0]["text"] == "Push the branch."
    assert [m.completed for m in first.upserts] == [True, False] and [m.position for m in first.upserts] == [
        0,
        1,
    ]
    assert not live.take(0.6)  # nothing changed: nothing written again
    for i, t in enumerate((1.0, 1.5, 2.0)):
        mirror.on_event(
            _ev("message.part.delta", messageID="msg_02", partID="prt_02", field="text", delta=f"ing {i}"), t
        )
        assert not live.take(t)  # still being written, stored half a second ago
    later = live.take(0.5 + WRITE_EVERY_S)
    assert _ids(later) == ["msg_02"] and later.upserts[0].body["parts"][0]["text"] == "Pushing 0ing 1ing 2"
    mirror.on_event(_ev("message.updated", info=_info("msg_02", done=True)), 6.0)
    assert _ids(live.take(6.1)) == ["msg_02"]  # finished: at once


def test_a_session_keeps_its_newest_messages_and_a_removed_one_goes() -> None:
    mirror = Mirror()
    live = LiveMessages(mirror)
    for i in range(MAX_MESSAGES + 5):
        mirror.on_event(_ev("message.updated", info=_info(f"msg_{i:04d}", done=True)), float(i))
        if i == 9:
            assert len(live.take(float(i)).upserts) == 10
    batch = live.take(1000.0)
    assert len(batch.upserts) == MAX_MESSAGES - 10 + 5
    assert sorted(batch.deletes) == [(SID, f"msg_{i:04d}") for i in range(5)]  # the oldest stored
    mirror.on_event(_ev("message.removed", messageID=f"msg_{MAX_MESSAGES:04d}"), 1001.0)
    assert live.take(1001.0).deletes == [(SID, f"msg_{MAX_MESSAGES:04d}")]


def test_bound_body_cuts_long_strings_then_the_oldest_parts() -> None:
    small = {"info": _info("m"), "parts": [_part("m", "p", "x" * 100)]}
    assert bound_body(small) == (small, False)
    long = {"info": _info("m"), "parts": [_part("m", "p", "x" * 200_000)]}
    out, cut = bound_body(long)
    assert (
        cut
        and len(out["parts"][0]["text"]) < 9_000
        and "more characters in the archive" in out["parts"][0]["text"]
    )
    many = {"info": _info("m"), "parts": [_part("m", f"p{i:05d}", "y" * 150) for i in range(3_000)]}
    out, cut = bound_body(many)
    assert cut and len(orjson.dumps(out)) <= MAX_MESSAGE_BYTES
    assert out["parts"][-1]["id"] == "p02999"  # the newest part kept


# what a store made from the batches holds equals the mirror's newest messages, whatever the
# order the events came in and whenever the ticks fell
_EVENTS = st.lists(
    st.tuples(st.integers(0, 7), st.sampled_from(["info", "done", "part", "delta"]), st.integers(0, 2)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_EVENTS, st.sets(st.integers(0, 39)))
def test_the_store_ends_equal_to_the_mirror_whatever_the_order_and_ticks(
    events: list[tuple[int, str, int]], ticks: set[int]
) -> None:
    mirror = Mirror()
    live = LiveMessages(mirror)
    store: dict[str, dict[str, Any]] = {}

    def apply(b: MessageBatch) -> None:
        for m in b.upserts:
            store[m.message_id] = m.body
        for _sid, mid in b.deletes:
            store.pop(mid, None)

    for i, (m, kind, p) in enumerate(events):
        mid, pid, t = f"msg_{m:02d}", f"prt_{m:02d}_{p}", float(i)
        if kind in ("info", "done"):
            mirror.on_event(_ev("message.updated", info=_info(mid, done=kind == "done")), t)
        elif kind == "part":
            mirror.on_event(_ev("message.part.updated", part=_part(mid, pid, f"t{i}")), t)
        else:
            mirror.on_event(
                _ev("message.part.delta", messageID=mid, partID=pid, field="text", delta=f"d{i}"), t
            )
        if i in ticks:
            apply(live.take(t))
    apply(live.take(len(events) + WRITE_EVERY_S + 1))
    s = mirror.session(SID)
    want = {x["info"]["id"]: x for x in s.messages()} if s is not None else {}
    assert store == want


def test_batches_are_stored_redacted_upserted_paged_and_cleared(engine: Engine) -> None:
    mirror = Mirror()
    live = LiveMessages(mirror)
    redactor = Redactor(b"k" * 32, [SECRET])
    mirror.on_event(_ev("message.updated", info=_info("msg_01", "user")), 0.0)
    mirror.on_event(_ev("message.part.updated", part=_part("msg_01", "prt_01", f"use {SECRET} to push")), 0.0)
    mirror.on_event(_ev("message.updated", info=_info("msg_02")), 0.1)
    mirror.on_event(_ev("message.part.updated", part=_part("msg_02", "prt_02", "x" * 100_000)), 0.1)
    with session_scope(engine) as db:
        assert store_live_messages(db, SERVER, live.take(1.0), redactor=redactor) == 2
    mirror.on_event(_ev("message.updated", info=_info("msg_02", done=True)), 2.0)
    with session_scope(engine) as db:
        assert store_live_messages(db, SERVER, live.take(2.0), redactor=redactor) == 0  # the same row
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(LiveMessage).order_by(LiveMessage.position)))
        page = live_message_page(db, SERVER, SID, None, 50)
    assert [(r.message_id, r.completed, r.cut) for r in rows] == [
        ("msg_01", True, False),
        ("msg_02", True, True),
    ]
    assert SECRET not in str(rows[0].body) and "use " in str(rows[0].body)
    assert [m.id for m in page.items] == ["msg_01", "msg_02"] and page.total == 2 and page.cut == ["msg_02"]
    assert page.items[0].parts[0]["text"].startswith("use ") and not page.items[1].in_flight
    with session_scope(engine, write=False) as db:
        newest = live_message_page(db, SERVER, SID, None, 1)
    assert newest.offset == 1 and [m.id for m in newest.items] == ["msg_02"] and newest.prev_offset == 0
    with session_scope(engine) as db:
        store_live_messages(db, SERVER, live.archived([SID]), redactor=redactor)
    with session_scope(engine, write=False) as db:
        assert db.exec(select(LiveMessage)).first() is None
    mirror.on_event(_ev("message.updated", info=_info("msg_03", "user")), 3.0)  # after the archive
    with session_scope(engine) as db:
        store_live_messages(db, SERVER, live.take(3.0), redactor=redactor)
        assert [r.message_id for r in db.exec(select(LiveMessage))] == ["msg_03"]
        forget_live(db, SERVER, [SID])
    with session_scope(engine, write=False) as db:
        assert db.exec(select(LiveMessage)).first() is None


def test_the_watcher_stores_messages_as_they_change_and_clears_them_once_archived() -> None:
    asyncio.run(_watch_and_archive())


async def _watch_and_archive() -> None:
    now = [100.0]
    batches: list[MessageBatch] = []

    async def on_messages(b: MessageBatch) -> None:
        batches.append(b)

    async def on_archive(*_a: Any) -> bool:
        return True

    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(404))) as http:
        cfg = WatchConfig(settle_seconds=1.0)
        w = Watcher(
            OpenCodeClient(http, "http://oc"),
            http,
            on_archive,
            config=cfg,
            on_messages=on_messages,
            clock=lambda: now[0],
        )
        w._event(orjson.dumps(_ev("session.created", info={"id": SID, "title": "t"})).decode())
        w._event(orjson.dumps(_ev("session.status", status={"type": "busy"})).decode())
        w._event(orjson.dumps(_ev("message.updated", info=_info("msg_01", "user"))).decode())
        await w.step()
        assert [_ids(b) for b in batches] == [["msg_01"]]
        await w.step()
        assert len(batches) == 1  # nothing new: no write
        w._event(orjson.dumps(_ev("session.idle")).decode())
        now[0] += 5.0
        await w.step()
        assert w.archives == 1 and batches[-1].cleared == [SID]


def test_no_key_shape_survives_in_live_messages(engine: Engine) -> None:
    from key_shapes import SIGNED_URLS, all_planted, every_key

    mirror = Mirror()
    live = LiveMessages(mirror)
    mirror.on_event(_ev("message.updated", info=_info("msg_01", "user")), 0.0)
    mirror.on_event(_ev("message.part.updated", part=_part("msg_01", "prt_01", f"use {all_planted()}")), 0.0)
    with session_scope(engine) as db:
        store_live_messages(db, SERVER, live.take(1.0), redactor=Redactor(b"k" * 32))
    with session_scope(engine, write=False) as db:
        stored = orjson.dumps([r.body for r in db.exec(select(LiveMessage))]).decode()
        served = orjson.dumps(live_message_page(db, SERVER, SID, None, 50).items[0].parts).decode()
    for text in (stored, served):
        assert [k for k in [*every_key(), *(s for _, s, _ in SIGNED_URLS)] if k in text] == []
        assert "[REDACTED:stripe:" in text and "[REDACTED:signature:" in text
