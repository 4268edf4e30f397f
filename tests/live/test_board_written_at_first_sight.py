"""A session the event stream brings for the first time is in the watcher's journal before it
reads the next event, and its live row goes to the store beside the stream, not at the next step
and not holding the stream back while the store makes it wait (SQLite lets one writer at a time):
a watcher killed the moment after leaves its trace for the one that takes over. A watcher
standing by writes nothing; rows the store refused are written again, the journal kept till then."""

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
    """``/event``: each chunk once the test lets it through; which sessions the store or the
    journal held by then is kept, chunk by chunk."""

    def __init__(self, chunks: list[bytes], rows: list[LiveRow], journal: Path) -> None:
        self.chunks, self.rows, self.journal = chunks, rows, journal
        self.go = asyncio.Event()
        self.held_before: list[set[str]] = []

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            await self.go.wait()
            self.go.clear()
            named = {s for sids in read_journal(self.journal).values() for s in sids}
            self.held_before.append({r.session_id for r in self.rows} | named)
            yield chunk
        await asyncio.Event().wait()  # the stream stays open


class _Store:
    """``on_live``: refuses once when told to, waits while ``busy`` is clear."""

    def __init__(self, *, fail_once: bool = False) -> None:
        self.rows: list[LiveRow] = []
        self.fail_once = fail_once
        self.free = asyncio.Event()
        self.free.set()

    async def __call__(self, batch: list[LiveRow]) -> None:
        await self.free.wait()
        if self.fail_once:
            self.fail_once = False
            raise RuntimeError("database is locked")
        self.rows.extend(batch)


def _watcher(stream: _Stream, store: _Store, mirror: Path) -> Watcher:
    async def on_archive(_root: str, _s: object, _p: object) -> None:
        return None

    def handler(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/event":
            return httpx.Response(200, stream=stream, headers={"content-type": "text/event-stream"})
        return httpx.Response(404)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    cfg = WatchConfig(mirror_dir=mirror)
    return Watcher(OpenCodeClient(http, "http://oc"), http, on_archive, config=cfg, on_live=store)


async def _spin(n: int = 200) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


async def _feed(w: Watcher, stream: _Stream, chunks: int, store: _Store, *, busy: bool = False) -> None:
    """Read the stream (no step runs) until every chunk was sent and the one after asked for;
    with ``busy``, the store makes every write wait until then."""
    if busy:
        store.free.clear()
    stop = asyncio.Event()
    task = asyncio.create_task(w._events(stop))
    for _ in range(chunks + 1):  # the last: ask for what follows the last chunk
        stream.go.set()
        for _ in range(1000):  # bounded: a stream held back fails the test, it does not hang
            if not stream.go.is_set():
                break
            await asyncio.sleep(0)
    store.free.set()
    await _spin()
    stop.set()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await w.http.aclose()


CHUNKS = [_line("session.created", ROOT), _line("session.created", KID, ROOT), _line("session.deleted", ROOT)]


def test_a_new_session_is_written_down_before_the_next_event_is_read(tmp_path: Path) -> None:
    store = _Store()
    stream = _Stream(CHUNKS, store.rows, tmp_path / "seen.log")
    w = _watcher(stream, store, tmp_path)
    asyncio.run(_feed(w, stream, len(CHUNKS), store))
    assert stream.held_before == [set(), {ROOT}, {ROOT, KID}]
    kid = next(r for r in store.rows if r.session_id == KID)
    assert kid.root_session_id == ROOT  # the takeover groups the tree by it
    assert read_journal(tmp_path / "seen.log") == {}  # the store holds them: nothing more to say


def test_a_store_that_makes_the_watcher_wait_does_not_hold_the_stream_back(tmp_path: Path) -> None:
    store = _Store()
    stream = _Stream(CHUNKS, store.rows, tmp_path / "seen.log")
    w = _watcher(stream, store, tmp_path)
    asyncio.run(_feed(w, stream, len(CHUNKS), store, busy=True))
    assert stream.held_before == [set(), {ROOT}, {ROOT, KID}]  # from the journal: the store waited
    assert {r.session_id for r in store.rows} == {ROOT, KID}  # written once it let us


def test_a_watcher_standing_by_writes_nothing(tmp_path: Path) -> None:
    store = _Store()
    stream = _Stream(CHUNKS[:2], store.rows, tmp_path / "seen.log")
    w = _watcher(stream, store, tmp_path)
    w.following = False
    asyncio.run(_feed(w, stream, 2, store))
    assert store.rows == [] and set(w.live.sessions) == {ROOT, KID}  # watched all the same
    assert not (tmp_path / "seen.log").exists()


def test_rows_the_store_refused_are_journaled_and_written_at_the_next_step(tmp_path: Path) -> None:
    store = _Store(fail_once=True)
    stream = _Stream(CHUNKS[:1], store.rows, tmp_path / "seen.log")
    w = _watcher(stream, store, tmp_path)
    asyncio.run(_feed(w, stream, 1, store))
    assert store.rows == []  # the store said no: the journal keeps what a takeover needs
    assert read_journal(tmp_path / "seen.log") == {ROOT: [ROOT]}
    asyncio.run(w._write_board())  # what the next step writes
    assert [r.session_id for r in store.rows] == [ROOT]
    assert read_journal(tmp_path / "seen.log") == {}
