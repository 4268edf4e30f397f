"""Conditional GETs for the JSON API: an ETag on every answer, 304 when it has not changed.

The console refreshes its view every ten seconds; with the ETag the browser revalidates
(`If-None-Match`) and an unchanged answer costs a few header bytes instead of the page again.
The tag is a hash of the body, so it needs no knowledge of what the answer was built from.
Compression (`GZipMiddleware`) runs outside this, so the tag names the plain body.
"""

from __future__ import annotations

import hashlib

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["ETagMiddleware", "etag_of"]

_MAX_BODY = 8 * 1024 * 1024  # a larger answer streams as it is, untagged


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"'


def _matches(header: str | None, tag: str) -> bool:
    if not header:
        return False
    wanted = {t.strip().removeprefix("W/") for t in header.split(",")}
    return "*" in wanted or tag in wanted


class ETagMiddleware:
    """ETag and `Cache-Control: no-cache` on successful GETs under /api/; 304 on a match."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        if scope["type"] != "http" or scope["method"] != "GET" or not path.startswith("/api/"):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []
        size = 0
        passing = False  # not buffered: an error, a stream, or too large

        async def wrapped(message: Message) -> None:
            nonlocal start, size, passing
            if passing:
                await send(message)
                return
            if message["type"] == "http.response.start":
                start = message
                if message["status"] != 200 or "etag" in Headers(raw=message["headers"]):
                    passing = True
                    await send(message)
                return
            if message["type"] != "http.response.body" or start is None:
                await send(message)
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > _MAX_BODY:
                passing = True
                await send(start)
                await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": True})
                if not message.get("more_body", False):
                    await send({"type": "http.response.body", "body": b""})
                return
            if message.get("more_body", False):
                return
            await _finish(start, b"".join(chunks))

        async def _finish(head: Message, body: bytes) -> None:
            tag = etag_of(body)
            headers = MutableHeaders(raw=list(head["headers"]))
            headers["ETag"] = tag
            headers["Cache-Control"] = "no-cache"
            if _matches(Headers(scope=scope).get("if-none-match"), tag):
                del headers["content-length"]
                del headers["content-type"]
                await send({"type": "http.response.start", "status": 304, "headers": headers.raw})
                await send({"type": "http.response.body", "body": b""})
                return
            await send({"type": "http.response.start", "status": 200, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, wrapped)
