"""The walk over real HTTP (httpx's connection pool on loopback), one at a time and concurrent."""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field

import httpx
from archiver_fakes import FakeOpenCode, LoopbackServer, tree
from realparts import free_port

from archiver.client import OpenCodeClient
from archiver.walk import TreeSnapshot, walk_tree


@dataclass
class _SlowFake(FakeOpenCode):
    """Counts the requests the server is working on at once (it runs one thread per connection)."""

    delay: float = 0.02
    now: int = 0
    peak: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def handle(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.delay)
        with self._lock:
            self.now -= 1
        return super().handle(request)


def _slow_tree(width: int) -> _SlowFake:
    fake = _SlowFake()
    src = tree([width], n_messages=3)
    fake.sessions, fake.children, fake.messages = src.sessions, src.children, src.messages
    return fake


def _walk(url: str, concurrency: int) -> TreeSnapshot:
    async def go() -> TreeSnapshot:
        limits = httpx.Limits(max_connections=concurrency)
        async with httpx.AsyncClient(timeout=30.0, limits=limits) as http:
            client = OpenCodeClient(http, url, max_concurrency=concurrency, page_size=2)
            return await walk_tree(client, "ses_root")

    return asyncio.run(go())


def test_real_pool_keeps_the_limit_in_flight() -> None:
    fake = _slow_tree(12)
    with LoopbackServer(fake) as srv:
        snap = _walk(srv.url, 4)
    assert len(snap.sessions) == 13 and snap.walk_errors == []
    assert fake.peak == 4
    assert snap.requests == len(fake.log)


def test_concurrent_walk_equals_the_one_at_a_time_walk() -> None:
    fake = tree([3, 4], n_messages=5)
    with LoopbackServer(fake) as srv:
        serial, fast = _walk(srv.url, 1), _walk(srv.url, 8)
    assert serial.walk_errors == fast.walk_errors == []
    assert serial.requests == fast.requests

    def shape(snap: TreeSnapshot) -> list[tuple[str, str | None, int, list[str]]]:
        return [
            (s.session_id, s.parent_id, s.depth, [m["info"]["id"] for m in s.messages]) for s in snap.sessions
        ]

    assert shape(serial) == shape(fast)
    assert [s.depth for s in fast.sessions] == sorted(s.depth for s in fast.sessions)
    assert all(len(s.messages) == 5 for s in fast.sessions)


def test_unreachable_server_fails_every_request_without_hanging() -> None:
    url = f"http://127.0.0.1:{free_port()}"

    async def go() -> TreeSnapshot:
        async with httpx.AsyncClient(timeout=5.0) as http:
            client = OpenCodeClient(http, url, backoff=0.0)
            return await asyncio.wait_for(walk_tree(client, "ses_root"), 20)

    snap = asyncio.run(go())
    assert snap.sessions == [] and {e.error_kind for e in snap.walk_errors} == {"connection"}
    assert snap.requests == 8  # health and the root record, each tried four times
