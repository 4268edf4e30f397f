"""The load generator of `bench_ingest.py`: W writers, each a keep-alive connection sending
one request after another, as a dispatcher does.

The lean client (the default) writes and parses HTTP/1.1 by hand, every connection on one event
loop: the load generator shares the server's cores, so it must cost far less CPU than the
server. `--client httpx` (a thread and an httpx client per writer) is kept to compare.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

__all__ = ["TOKEN", "rate_of"]

TOKEN = "bench-token-0123456789"


class _Conn(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection, written and parsed by hand, all of them on one event
    loop: the load generator shares the server's cores, so it must cost far less CPU than the
    server (`--client httpx`, a thread and an httpx client per writer, is kept to compare). A
    protocol rather than a stream: an answer is found in what arrived with two searches, not
    read a line at a time."""

    def __init__(self, host: str) -> None:
        self.head = f"Host: {host}\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
        self.buffer = b""
        self.transport: asyncio.Transport | None = None
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None

    @classmethod
    async def open(cls, base: str) -> _Conn:
        host, port = base.removeprefix("http://").split(":")
        _, conn = await asyncio.get_running_loop().create_connection(lambda: cls(host), host, int(port))
        return conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0 or self.waiter is None:
            return
        head = self.buffer[:end].lower()
        at = head.find(b"\r\ncontent-length:")
        length = 0
        if at >= 0:
            stop = head.find(b"\r\n", at + 2)
            length = int(head[at + 17 : stop if stop >= 0 else len(head)])
        if len(self.buffer) < end + 4 + length:
            return
        status = int(head[9:12])
        body, self.buffer = self.buffer[end + 4 : end + 4 + length], self.buffer[end + 4 + length :]
        waiter, self.waiter = self.waiter, None
        waiter.set_result((status, body))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionError("the server closed the connection"))

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        assert self.transport is not None
        waiter = self.waiter = asyncio.get_running_loop().create_future()
        if body is None:
            self.transport.write(f"{method} {path} HTTP/1.1\r\n".encode() + self.head + b"\r\n")
        else:
            data = json.dumps(body).encode()
            extra = f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode()
            self.transport.write(f"{method} {path} HTTP/1.1\r\n".encode() + self.head + extra + data)
        return await waiter

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


Job = Callable[[Any, int, int], Awaitable[None]]


class _HttpxConn:
    """The same requests through a blocking httpx client (one per writer thread)."""

    def __init__(self, base: str) -> None:
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        r = self.client.request(method, path, json=body)
        return r.status_code, r.content

    def close(self) -> None:
        self.client.close()


def _rate_threads(writers: int, per_writer: int, job: Job, base: str) -> float:
    barrier = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        c = _HttpxConn(base)
        asyncio.run(c.request("GET", "/api/health"))
        barrier.wait()
        try:
            asyncio.run(_repeat(job, c, w, per_writer))
        except BaseException as e:  # reported after the run, not swallowed
            errors.append(e)
        c.close()

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return writers * per_writer / elapsed


async def _repeat(job: Job, c: Any, w: int, n: int) -> None:
    for i in range(n):
        await job(c, w, i)


def rate_of(writers: int, per_writer: int, job: Job, base: str, client: str = "lean") -> float:
    """Operations per second when `writers` connections each run `job` `per_writer` times,
    one after another (a dispatcher waits for each answer), all from one event loop."""
    if client == "httpx":
        return _rate_threads(writers, per_writer, job, base)

    async def run() -> float:
        conns = [await _Conn.open(base) for _ in range(writers)]
        for c in conns:  # connected and answered once before the clock starts
            await c.request("GET", "/api/health")

        t0 = time.perf_counter()
        await asyncio.gather(*(_repeat(job, conns[w], w, per_writer) for w in range(writers)))
        elapsed = time.perf_counter() - t0
        for c in conns:
            c.close()
        return writers * per_writer / elapsed

    with asyncio.Runner(loop_factory=_fast_loop()) as runner:
        return runner.run(run())


def _fast_loop() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (it is with `octel serve`'s uvicorn[standard]):
    less CPU a request for the client too."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
