"""The `Host` check: a request naming a host the server does not answer for is refused.

Refusing unknown names stops DNS rebinding (a page on `evil.example` that resolves to
127.0.0.1 reading the console). The refusal is the API's JSON envelope, like every other 4xx.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from web.errors import error_body

__all__ = ["HostCheck", "host_allowed", "host_name"]


def host_name(header: str) -> str:
    """The name in a `Host` header, without its port: `[::1]:80` → `[::1]`, `a.b:80` → `a.b`."""
    header = header.strip().lower()
    if header.startswith("["):
        end = header.find("]")
        return header[: end + 1] if end > 0 else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def host_allowed(header: str, patterns: list[str]) -> bool:
    """Whether the header names an allowed host: an exact name, or `*.example.org` for its subdomains."""
    name = host_name(header)
    if not name:
        return False
    for pattern in patterns:
        if pattern == "*" or name == pattern:
            return True
        if pattern.startswith("*.") and name.endswith(pattern[1:]) and len(name) > len(pattern) - 1:
            return True
    return False


class HostCheck:
    """Answers 400 with the JSON envelope when the `Host` header is not an allowed name."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self.app = app
        self.patterns = [p.strip().lower() for p in allowed_hosts if p.strip()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            header = Headers(scope=scope).get("host", "")
            if not host_allowed(header, self.patterns):
                why = "the Host header names a host this server does not answer for (OCTEL_ALLOWED_HOSTS)"
                body = error_body("invalid_host", why, [{"field": "header.host", "message": why}])
                await JSONResponse(body, 400)(scope, receive, send)
                return
        await self.app(scope, receive, send)
