"""The door of the app, as ASGI middleware: tokens are checked and body sizes bounded before
any route reads a byte of the body, and every response carries the security headers.

Writes (`/api/v1/…`) need the ingest token: a 150 MB POST without it is answered 401 at once,
its body never read. With `OCTEL_READ_TOKEN` set, reads need the read token (or the ingest
token) as a bearer, or the console's login cookie (`web.login_cookie`); a write that rides on
the cookie (a form post: `/logout`) must come from the console's own origin, or it is a 403:
a browser sends any site's cookies with a cross-site form post. A body over its route's limit is a 413:
at once when `Content-Length` says so, else as soon as the streamed (chunked) bytes pass it.
"""

from __future__ import annotations

import secrets
import time
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl

from fastapi.responses import JSONResponse, RedirectResponse
from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry.settings import Settings
from web.app_state import app_state
from web.errors import error_body
from web.query_once import query_refusal

__all__ = ["COOKIE", "Guard", "SecurityHeaders", "cookie_value", "cross_site", "valid_token"]

COOKIE = "octel_console"
_WRITE_PREFIX = "/api/v1/"
_RUNS = "/api/v1/agent-runs"
_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})
# Open to anyone even with a read token: the login form and the files it needs carry no data.
_OPEN_PREFIXES = ("/login", "/static/")
_CONSOLE_PAGES = frozenset({"/", "/console"})
# Every response: no sniffing, no framing, no referrer; a policy that loads nothing unless the
# route set its own (the console's shell page does).
_HEADERS = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}
_DEFAULT_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"


def valid_token(given: str | None, *expected: str | None) -> bool:
    """True when `given` equals one of the expected tokens (compared in constant time)."""
    if not given:
        return False
    return any(e is not None and secrets.compare_digest(given.encode(), e.encode()) for e in expected if e)


def cross_site(headers: Headers) -> bool:
    """Whether a browser says the request comes from another origin than the one it is sent to
    (`Sec-Fetch-Site`, or an `Origin` whose host and port are not the `Host`); a client that
    sends neither (curl, a script) is no browser carrying a cookie it did not choose."""
    site = headers.get("sec-fetch-site", "").lower()
    if site in ("cross-site", "same-site"):
        return True
    origin = headers.get("origin")
    if origin is None:
        return False
    scheme, sep, rest = origin.partition("://")
    return (
        not sep or scheme.lower() not in ("http", "https") or rest.lower() != headers.get("host", "").lower()
    )


def _bearer(headers: Headers) -> str | None:
    scheme, _, value = headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


def cookie_value(headers: Headers) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # a mangled Cookie header is no login, never an error
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel is not None else None


def _unauthorized(message: str) -> JSONResponse:
    return JSONResponse(error_body("unauthorized", message), 401, headers={"WWW-Authenticate": "Bearer"})


def _nul_field(scope: Scope) -> str | None:
    """The first query parameter holding a NUL character (no store can search or keep one)."""
    query = scope.get("query_string", b"").decode("latin-1")
    if "%00" not in query and "\x00" not in query:
        return None
    for name, value in parse_qsl(query, keep_blank_values=True, encoding="utf-8", errors="replace"):
        if "\x00" in name or "\x00" in value:
            return f"query.{name.replace(chr(0), '')}"
    return None


def _too_large(limit: int) -> HTTPException:
    return HTTPException(413, f"the request body is larger than {limit} bytes")


class Guard:
    """Token checks and body limits, before the body is read."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        read = settings.read_token.get_secret_value() if settings.read_token else ""
        self.read_token = read or None

    def _limit(self, path: str) -> int:
        s = self.settings
        return s.max_run_body_bytes if path.rstrip("/") == _RUNS else s.max_body_bytes

    def _refusal(self, scope: Scope) -> JSONResponse | RedirectResponse | None:
        path, method = scope["path"], scope["method"]
        headers = Headers(scope=scope)
        state = app_state(scope["app"])
        ingest: str | None = getattr(state, "ingest_token", None)  # none until the lifespan ran
        if path.startswith(_WRITE_PREFIX) and method not in _SAFE:
            if not valid_token(_bearer(headers), ingest):
                return _unauthorized("a valid bearer token is required")
            return None
        if self.read_token is None or path.startswith(_OPEN_PREFIXES):
            return None
        if valid_token(_bearer(headers), self.read_token, ingest):
            return None
        if state.logins.valid(cookie_value(headers), time.time()):
            if method not in _SAFE and cross_site(headers):
                body = error_body("forbidden", "a cross-site request may not use the console login")
                return JSONResponse(body, 403)
            return None
        if path in _CONSOLE_PAGES and method in _SAFE:
            return RedirectResponse("/login", status_code=303)
        return _unauthorized("reading needs the read token (Authorization: Bearer) or a console login")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        if "\x00" in scope["path"]:
            await JSONResponse(error_body("not_found", "no such path"), 404)(scope, receive, send)
            return
        if (field := _nul_field(scope)) is not None:
            why = "text may not contain NUL characters"
            body = error_body("invalid_request", f"{field}: {why}", [{"field": field, "message": why}])
            await JSONResponse(body, 422)(scope, receive, send)
            return
        if (refused := query_refusal(scope)) is not None:
            field, why = refused
            body = error_body("invalid_request", f"{field}: {why}", [{"field": field, "message": why}])
            await JSONResponse(body, 422)(scope, receive, send)
            return
        limit = self._limit(scope["path"])
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > limit:
            body = error_body("payload_too_large", f"the request body is larger than {limit} bytes")
            await JSONResponse(body, 413)(scope, receive, send)
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # raised inside the route's body read: FastAPI answers it
                    raise _too_large(limit)
            return message

        await self.app(scope, bounded, send)


class SecurityHeaders:
    """The security headers on every response, whichever layer produced it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers.setdefault(name, value)
                headers.setdefault("content-security-policy", _DEFAULT_CSP)
            await send(message)

        await self.app(scope, receive, with_headers)
