"""The `Host` check: a request naming a host the server does not answer for is refused.

Refusing unknown names stops DNS rebinding (a page on `evil.example` that resolves to
127.0.0.1 reading the console). The header is parsed strictly (RFC 9110 `uri-host [":" port]`):
`[::1]evil.example` or `localhost:8765@evil.example` is no host at all, not a name to trim.
Two `Host` headers, or a request target in absolute form (`GET http://evil.example/`, whose
host a proxy would prefer to the header), are refused too. The refusal is the API's JSON
envelope, like every other 4xx.
"""

from __future__ import annotations

import re

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from web.errors import error_body

__all__ = ["HostCheck", "host_allowed", "host_name"]

# a bracketed IPv6 literal, or a registered name / IPv4 address, then an optional port
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?)(?::([0-9]{1,5}))?")


def host_name(header: str) -> str:
    """The name in a `Host` header, without its port: `[::1]:80` → `[::1]`, `a.b:80` → `a.b`;
    empty when the header is not exactly a host and an optional port."""
    m = _HOST.fullmatch(header.strip().lower())
    if m is None or (m.group(2) is not None and not 0 < int(m.group(2)) <= 65535):
        return ""
    return m.group(1)


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


def _refusal(scope: Scope, patterns: list[str]) -> str | None:
    """Why the request's host is refused, or None."""
    hosts = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"host"]
    if len(hosts) > 1:
        return "the request has more than one Host header"
    raw = scope.get("raw_path") or scope.get("path", "").encode()
    if scope["type"] == "http" and not raw.startswith(b"/") and raw != b"*":
        return "the request target must be a path (absolute-form URLs are not served)"
    if not host_allowed(hosts[0] if hosts else "", patterns):
        return "the Host header names a host this server does not answer for (OCTEL_ALLOWED_HOSTS)"
    return None


class HostCheck:
    """Answers 400 with the JSON envelope when the `Host` header is not one allowed name."""

    def __init__(self, app: ASGIApp, allowed_hosts: list[str]) -> None:
        self.app = app
        self.patterns = [p.strip().lower() for p in allowed_hosts if p.strip()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and (why := _refusal(scope, self.patterns)) is not None:
            body = error_body("invalid_host", why, [{"field": "header.host", "message": why}])
            await JSONResponse(body, 400)(scope, receive, send)
            return
        await self.app(scope, receive, send)
