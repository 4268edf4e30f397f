"""A tree deleted before the server could be read, archived from the watcher's mirror of a real
server's events: through the same write, redaction, read-back and index as every archive; the
archive says it came from the mirror; what was lost is a row, a counter and a log line."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.files import read_archive
from telemetry.archiving import archive_session_tree_async, redactor_for
from telemetry.queries.lost import list_lost
from telemetry.settings import Settings
from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from telemetry.store.lost_models import LostTree
from telemetry.store.models import SessionIndex
from telemetry.tower.lost import archive_from_mirror
from tower.mirror import Mirror

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "opencode" / "subagent_tree.json"


def _capture() -> tuple[str, list[dict[str, Any]], dict[str, Any]]:
    d = json.loads(CAPTURE.read_text())
    return d["root_id"], [e["event"] for e in d["events"]], d["messages"]


def _rescue(settings: Settings, engine: Engine, mirror: Mirror, top: str, logs: list[str]) -> Any:
    async def go() -> Any:
        async with httpx.AsyncClient() as http:  # never used: the tree is given
            snap = mirror.snapshot(top, "http://oc.test")
            return await archive_from_mirror(
                top,
                snap,
                {},
                {},
                archive=archive_session_tree_async,
                engine=engine,
                redactor=redactor_for(settings),
                server="http://oc.test",
                log=logs.append,
                settings=settings,
                server_url="http://oc.test",
                http=http,
            )

    return asyncio.run(go())


def _lost(engine: Engine) -> tuple[list[LostTree], float]:
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(LostTree)))
        counted = sum(v for m, _lbl, v in read_all(db) if m == "trees_lost_total")
    return rows, counted


def test_a_complete_stream_archives_every_message_from_the_mirror(settings: Settings, engine: Engine) -> None:
    root, events, export = _capture()
    m = Mirror()
    for e in events:
        m.on_event(e, 1.0)
    for sid in export:
        m.on_event({"type": "session.deleted", "properties": {"info": {"id": sid}}}, 2.0)
    assert m.due(5.0) == [root]
    logs: list[str] = []
    out = _rescue(settings, engine, m, root, logs)
    assert out.ok, out.to_dict()
    docs = {d["session_id"]: d for d in map(read_archive, out.files)}
    assert set(docs) == set(export)
    for sid, doc in docs.items():
        assert doc["source"]["origin"] == "mirror" and doc["walk_errors"] == []
        assert [x["info"]["id"] for x in doc["messages"]] == [x["info"]["id"] for x in export[sid]]
    with session_scope(engine, write=False) as db:
        assert {r.session_id for r in db.exec(select(SessionIndex))} == set(export)
    assert _lost(engine) == ([], 0)
    assert "from the mirror" in logs[-1]


def test_a_stream_closed_mid_tree_is_archived_and_said_lost(settings: Settings, engine: Engine) -> None:
    root, events, _export = _capture()
    m = Mirror()
    for e in events[: len(events) // 2]:
        m.on_event(e, 1.0)
    m.gap("event stream closed by the server", 1.5)
    m.on_event({"type": "session.deleted", "properties": {"info": {"id": root}}}, 2.0)
    logs: list[str] = []
    out = _rescue(settings, engine, m, root, logs)
    assert not out.ok and out.files  # what was seen is kept, and said incomplete
    doc = read_archive(next(p for p in out.files if root in p.name))
    assert doc["source"]["origin"] == "mirror"
    assert any(e["error_kind"] == "connection" for e in doc["walk_errors"])
    rows, counted = _lost(engine)
    assert counted == 1 and len(rows) == 1
    row = rows[0]
    assert (row.reason, row.origin, row.archived, row.root_session_id) == ("incomplete", "mirror", True, root)
    assert any("stream closed" in str(x["message"]) for x in row.missing or [])
    assert logs[-1].startswith("LOST")
    with session_scope(engine, write=False) as db:  # `octel lost` says each loss as it was kept
        (said,) = list_lost(db).items
    assert said.model_dump(mode="json")["missing"] == row.missing


def test_a_tree_deleted_before_any_event_is_said_lost(settings: Settings, engine: Engine) -> None:
    m = Mirror()
    m.on_event({"type": "session.deleted", "properties": {"sessionID": "ses_gone"}}, 2.0)
    logs: list[str] = []
    assert _rescue(settings, engine, m, "ses_gone", logs) is None
    rows, counted = _lost(engine)
    assert counted == 1 and [(r.reason, r.archived) for r in rows] == [("unseen", False)]
    assert "nothing archived" in logs[-1]


def test_a_watcher_whose_stream_closes_mid_tree_archives_what_it_saw_and_says_what_is_lost(
    settings: Settings, engine: Engine
) -> None:
    """The stream closes halfway through a real run and the tree is gone when the watcher
    reads the server: the archive comes from the mirror, and the loss is a row and a counter."""
    from telemetry.archiving import watch_server
    from tower.watch import WatchConfig

    root, events, _export = _capture()
    half = events[: len(events) // 2]
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in half)

    def handle(req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if path == "/event":
            return httpx.Response(200, content=next(streams))  # then closed, and empty after
        if path == "/session/status":
            return httpx.Response(200, json={})
        if path in ("/session", "/permission"):
            return httpx.Response(200, json=[])
        return httpx.Response(404, json={"name": "NotFoundError"})  # deleted, all of it

    logs: list[str] = []

    async def go() -> None:
        stop = asyncio.Event()
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
            cfg = WatchConfig(settle_seconds=0.2, poll_interval=0.05, sse_retry_seconds=60)
            task = asyncio.create_task(
                watch_server(
                    settings,
                    stop,
                    engine=engine,
                    server_url="http://oc.test",
                    config=cfg,
                    log=logs.append,
                    http=http,
                )
            )
            for _ in range(100):
                await asyncio.sleep(0.1)
                if _lost(engine)[0]:
                    break
            stop.set()
            await task

    streams = iter([body, *([b""] * 1000)])
    asyncio.run(go())
    rows, counted = _lost(engine)
    assert rows, logs
    row = next(r for r in rows if r.root_session_id == root)
    assert row.reason == "incomplete" and row.archived and row.origin == "mirror"
    assert any(m["error_kind"] == "connection" for m in row.missing or [])
    assert counted == len(rows)
    assert any(line.startswith("LOST") for line in logs)
    with session_scope(engine, write=False) as db:
        assert root in {r.session_id for r in db.exec(select(SessionIndex))}
