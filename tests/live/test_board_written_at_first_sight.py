"""A session the event stream brings for the first time is on the store's live board before the
watcher reads the next event, not at its next step: a watcher killed the moment after leaves its
trace for the one that takes over (which says the tree lost when the server deleted it
meanwhile). A watcher standing by writes nothing; rows the store refused are written again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson

from archiver.client import OpenCodeClient
from tower.live_board import LiveRow
from tower.seen import read_journal
from tower.watch import WatchConfig, Watcher

ROOT, KID = "ses_root1", "ses_kid1"


def _line(kind: str, sid: str, parent: str | None = None) -> bytes:
    info = {"id": sid, "title": "t", **({"parentID": parent} if parent else {})}
    ev = {"type": kind, "properties": {"sessionID": sid, "info": info}}
    return b"data: " + orjson.dumps(ev) + b"\n\n"


class _Stream(httpx.AsyncByteStream):
    """``/event``: each chunk once the test lets it through; what the store held by then is
    kept, chunk by chunk."""

    def __init__(self, chunks: list[bytes], rows: list[LiveRow]) -> None:
        self.chunks, self.rows = chunks, rows
        self.go = asyncio.Event()
        self.held_before: list[set[str]] = []  # session ids stored before each chunk was sent

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await self.go.wait()
            self.go.clear()
            self.held_before.append({r.session_id for r in self.rows})
            yield chunk
        await asyncio.Event().wait()  # the stream stays open


def _watcher(
    stream: _Stream, rows: list[LiveRow], *, fail_once: bool = False, mirror: Path | None = None
) -> Watcher:
    failed: list[bool] = []

    async def on_live(batch: list[LiveRow]) -> None:
        if fail_once and not failed:
            failed.append(True)
            raise RuntimeError("database is locked")
        rows.extend(batch)

    async def on_archive(_root: str, _s: object, _p: object) -> None:
        return None

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/event":
            return httpx.Response(200, stream=stream, headers={"content-type": "text/event-stream"})
        return httpx.Response(404)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return Watcher(
        OpenCodeClient(http, "http://oc"),
        http,
        on_archive,
        config=WatchConfig(mirror_dir=mirror),
        on_live=on_live,
    )


async def _feed(w: Watcher, stream: _Stream, chunks: int) -> None:
    """Read the stream (no step runs) until every chunk was sent and the one after asked for."""
    stop = asyncio.Event()
    task = asyncio.create_task(w._events(stop))
    for _ in range(chunks):
        stream.go.set()
        while stream.go.is_set():
            await asyncio.sleep(0)
    stream.go.set()  # the end: ask for what follows the last chunk
    for _ in range(100):
        await asyncio.sleep(0)
    stop.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await w.http.aclose()


def test_a_new_session_is_stored_before_the_next_event_is_read() -> None:
    rows: list[LiveRow] = []
    chunks = [
        _line("session.created", ROOT),
        _line("session.created", KID, ROOT),
        _line("session.deleted", ROOT),
    ]
    stream = _Stream(chunks, rows)
    w = _watcher(stream, rows)
    asyncio.run(_feed(w, stream, len(chunks)))
    assert stream.held_before == [set(), {ROOT}, {ROOT, KID}]
    kid = next(r for r in rows if r.session_id == KID)
    assert kid.root_session_id == ROOT  # the takeover groups the tree by it


def test_a_watcher_standing_by_writes_no_row() -> None:
    rows: list[LiveRow] = []
    stream = _Stream([_line("session.created", ROOT), _line("session.created", KID, ROOT)], rows)
    w = _watcher(stream, rows)
    w.following = False
    asyncio.run(_feed(w, stream, 2))
    assert rows == [] and set(w.live.sessions) == {ROOT, KID}  # watched all the same


def test_rows_the_store_refused_are_journaled_and_written_at_the_next_step(tmp_path: Path) -> None:
    rows: list[LiveRow] = []
    stream = _Stream([_line("session.created", ROOT)], rows)
    w = _watcher(stream, rows, fail_once=True, mirror=tmp_path)
    asyncio.run(_feed(w, stream, 1))
    assert rows == []  # the store said no (locked): the journal keeps what a takeover needs
    assert read_journal(tmp_path / "seen.log") == {ROOT: [ROOT]}
    asyncio.run(w._write_board())  # what the next step writes
    assert [r.session_id for r in rows] == [ROOT]
    assert read_journal(tmp_path / "seen.log") == {}  # the store holds it now
