"""A loopback proxy in front of a real `opencode serve` that holds the first abort request it
is sent: never answered, never passed on. To the watcher it is a server that took the request
and lags (its session still retrying), so a watcher killed while it waits leaves its action
unfinished; every later request, aborts too, passes through, and every abort is counted."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


class HoldingProxy:
    def __init__(self, upstream: str, port: int) -> None:
        self.upstream = upstream.rstrip("/")
        self.url = f"http://127.0.0.1:{port}"
        self.aborts: list[str] = []  # the path of every abort request that arrived
        self.held = threading.Event()  # set once the first abort is being held
        self._port = port
        self._client: httpx.AsyncClient | None = None

    async def _pass(self, request: Request) -> Response:
        path = request.url.path
        body = await request.body()
        if request.method == "POST" and path.endswith("/abort"):
            self.aborts.append(path)
            if len(self.aborts) == 1:
                self.held.set()
                await asyncio.sleep(3600)  # held: the caller waits, OpenCode never hears of it
        assert self._client is not None
        url = f"{self.upstream}{path}" + (f"?{request.url.query}" if request.url.query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        r = await self._client.send(
            self._client.build_request(request.method, url, headers=headers, content=body), stream=True
        )
        out = {k: v for k, v in r.headers.items() if k.lower() not in _HOP}
        return StreamingResponse(r.aiter_raw(), r.status_code, out, background=BackgroundTask(r.aclose))

    @contextlib.contextmanager
    def running(self) -> Iterator[HoldingProxy]:
        methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
        app = Starlette(routes=[Route("/{path:path}", self._pass, methods=methods)])
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self._port, log_level="warning"))

        async def serve() -> None:
            async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, read=None)) as client:
                self._client = client
                await server.serve()

        thread = threading.Thread(target=lambda: asyncio.run(serve()), daemon=True)
        thread.start()
        try:
            while not server.started:
                threading.Event().wait(0.05)
            yield self
        finally:
            server.should_exit = True
            server.force_exit = True  # the held request would keep it open
            thread.join(10)
