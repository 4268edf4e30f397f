"""One line of the event stream is read up to `max_event_bytes` (OCTEL_WATCH_MAX_EVENT_BYTES):
an endless `data:` line is skipped as it comes, said and counted, the reader never holds more
than the cap and a chunk, and the events after it are read. Against a real HTTP server on
loopback that streams a 48 MiB line."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest
import uvicorn
from hypothesis import given
from hypothesis import strategies as st
from realparts import free_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from archiver.client import OpenCodeClient
from archiver.sse_lines import LineReader
from tower.watch import WatchConfig, Watcher

CAP = 2**20
HUGE_MIB = 48


@given(
    lines=st.lists(st.binary(max_size=40).filter(lambda b: b"\n" not in b), max_size=12),
    cuts=st.lists(st.integers(0, 600), max_size=10),
    cap=st.integers(1, 30),
)
def test_lines_are_those_of_the_stream_minus_the_long_ones_whatever_the_chunks(
    lines: list[bytes], cuts: list[int], cap: int
) -> None:
    stream = b"".join(x + b"\n" for x in lines)
    reader, got = LineReader(cap), []
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for a, b in itertools.pairwise(bounds):
        got += reader.feed(stream[a:b])
        assert reader.held <= cap
    want = [x[:-1] if x.endswith(b"\r") else x for x in lines if len(x) <= cap]
    assert got == want
    assert reader.oversized == sum(len(x) > cap for x in lines)


async def _event(_r: Request) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        yield b'data: {"type":"server.connected","properties":{}}\n\n'
        yield b'data: {"type":"message.part.updated","properties":{"part":{"text":"'
        piece = b"x" * 2**20
        for _ in range(HUGE_MIB):
            yield piece
        yield b'"}}}\n\n'
        yield (
            b'data: {"type":"session.created","properties":{"info":{"id":"ses_after",'
            b'"time":{"created":1,"updated":1}}}}\n\n'
        )
        while True:
            await asyncio.sleep(0.2)
            yield b": ping\n\n"

    return StreamingResponse(body(), media_type="text/event-stream")


async def _empty(_r: Request) -> JSONResponse:
    return JSONResponse([])


async def _status(_r: Request) -> JSONResponse:
    return JSONResponse({})


@pytest.fixture
def sse_server() -> Iterator[str]:
    app = Starlette(
        routes=[
            Route("/event", _event),
            Route("/session/status", _status),
            Route("/session", _empty),
            Route("/permission", _empty),
        ]
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_an_endless_event_line_is_skipped_and_the_watch_reads_on(sse_server: str) -> None:
    said: list[str] = []

    async def main() -> Watcher:
        async with httpx.AsyncClient(base_url=sse_server, timeout=30) as http:

            async def on_archive(*_a: object) -> bool:
                return True

            cfg = WatchConfig(max_event_bytes=CAP, poll_interval=0.2)
            w = Watcher(OpenCodeClient(http, sse_server), http, on_archive, config=cfg, log=said.append)
            stop = asyncio.Event()
            run = asyncio.create_task(w.run(stop, tick=0.05))
            for _ in range(1200):  # a guard, not a measure: the event after the long one is read
                if "ses_after" in w.rec.parents:
                    break
                await asyncio.sleep(0.05)
            stop.set()
            await run
            return w

    w = asyncio.run(main())
    assert "ses_after" in w.rec.parents, said
    assert w.oversized_events == 1 and w.mode == "events"
    assert any(f"over {CAP} bytes skipped" in m for m in said)
    # the reader held the cap and one chunk at most, never the 48 MiB line
    assert w.event_buffer_peak <= CAP + 64 * 1024
