"""One JSON request over an injected httpx client, with retries and a bounded number in flight.

Idempotent reads retry on transport errors and 5xx with a short exponential backoff; every
failure becomes a ``FetchError`` with an ``error_kind``. Accepts an ``httpx.AsyncClient`` or a
plain ``httpx.Client`` (run in a worker thread so the walk stays concurrent).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

import httpx
import orjson

from archiver.cut import cut
from archiver.errors import FetchError
from archiver.shape import RawJson

__all__ = ["JsonHttp", "Query", "Reply"]

Query = Mapping[str, str | int]
"""A request's query: the server's filters and paging (``limit``, ``cursor``, ``order`` …)."""


class _Send(TypedDict, total=False):
    """What a request sends besides its query: a JSON body, the Basic auth pair."""

    json: Any  # any JSON value the route takes
    auth: tuple[str, str]


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any
    headers: httpx.Headers


def _kind_of(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return "timeout"
    if isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError):
        return "connection"
    return "transport"


def _is_object_not_found(body: Any) -> bool:
    # OpenCode answers a missing session with {"name":"NotFoundError",...} (1.x) or
    # {"_tag":"SessionNotFoundError",...} (2.x); a missing route answers with something else
    # (plain text, an empty body, or the web UI's HTML).
    return isinstance(body, dict) and "NotFound" in str(body.get("name") or body.get("_tag") or "")


def _not_found_message(body: RawJson) -> str:
    data = body.get("data")
    return str((data if isinstance(data, dict) else body).get("message", "not found"))


AUTH_HINT = (
    "authentication failed (HTTP {status}): the server wants HTTP Basic auth; "
    "set OCTEL_OPENCODE_PASSWORD (and OCTEL_OPENCODE_USERNAME, default opencode)"
)


class JsonHttp:
    """GET/POST JSON against one server; retries idempotent reads."""

    def __init__(
        self,
        http: httpx.AsyncClient | httpx.Client,
        base_url: str,
        *,
        retries: int = 3,
        backoff: float = 0.05,
        max_concurrency: int = 8,
        auth: tuple[str, str] | None = None,
    ) -> None:
        self._http = http
        # sent with each request, never logged or put in an error message
        self._auth = auth
        self.base_url = base_url.rstrip("/")
        self._retries = retries
        self._backoff = backoff
        self._gate = asyncio.Semaphore(max_concurrency)
        self._entry = asyncio.Lock()
        self._traced: bool | None = None
        self.requests = 0

    @property
    def auth(self) -> tuple[str, str] | None:
        """The Basic auth pair, for a request made outside this wrapper (the event stream)."""
        return self._auth

    async def _send(self, method: str, url: str, params: Query | None, extra: _Send) -> httpx.Response:
        if self._auth is not None:
            extra = {**extra, "auth": self._auth}
        async with self._gate:
            self.requests += 1
            if isinstance(self._http, httpx.AsyncClient):
                return await self._send_async(self._http, method, url, params, extra)
            return await asyncio.to_thread(self._http.request, method, url, params=params, **extra)

    async def _send_async(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        params: Query | None,
        extra: _Send,
    ) -> httpx.Response:
        # httpcore 1.0's pool hands the same idle connection to every request that enters it
        # before the first one has claimed it; the others fail over and rescan the pool (a
        # poll() and a getpeername() per idle socket each time), so a burst of n requests costs
        # O(n^2) scans and most of the CPU of a concurrent walk. The next request enters only
        # once the previous one holds its connection, which its first trace event tells.
        if self._traced is False:
            return await http.request(method, url, params=params, **extra)
        entry = self._entry
        await entry.acquire()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                entry.release()

        async def trace(event: str, info: RawJson) -> None:
            self._traced = True
            release()

        try:
            resp = await http.request(method, url, params=params, extensions={"trace": trace}, **extra)
        finally:
            release()
        if self._traced is None:
            # a transport that sends no trace events (no httpcore pool): nothing to serialise
            self._traced = False
        return resp

    async def request(
        self,
        method: str,
        path: str,
        params: Query | None = None,
        *,
        idempotent: bool = True,
        json_body: Any = None,
    ) -> Reply:
        """The parsed JSON reply of a 2xx answer, else a FetchError."""
        url = self.base_url + path
        attempts = self._retries + 1 if idempotent else 1
        last: FetchError | None = None
        extra: _Send = {} if json_body is None else {"json": json_body}
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(self._backoff * (2 ** (attempt - 1)))
            try:
                resp = await self._send(method, url, params, extra)
            except httpx.TransportError as exc:
                last = FetchError(_kind_of(exc), f"{type(exc).__name__}: {exc}", path=path)
                last.__cause__ = exc  # why it failed (refused, timed out), for the watcher's one sentence
                continue
            if resp.status_code >= 500:
                last = FetchError(
                    "server_error",
                    f"HTTP {resp.status_code}: {cut(resp.text, 200)}",
                    path=path,
                    status=resp.status_code,
                )
                continue
            return self._parse(resp, path)
        assert last is not None
        raise last

    @staticmethod
    def _parse(resp: httpx.Response, path: str) -> Reply:
        status = resp.status_code
        try:
            body = orjson.loads(resp.content) if resp.content else None
            parsed = True
        except orjson.JSONDecodeError:
            body, parsed = cut(resp.text, 200), False
        if status in (404, 405):
            if parsed and isinstance(body, dict) and _is_object_not_found(body):
                msg = _not_found_message(body)
                raise FetchError("not_found", msg, path=path, status=status)
            raise FetchError("unsupported", f"route not served (HTTP {status})", path=path, status=status)
        if status in (401, 403):
            raise FetchError("http_error", AUTH_HINT.format(status=status), path=path, status=status)
        if status >= 400:
            raise FetchError("http_error", f"HTTP {status}: {cut(str(body), 200)}", path=path, status=status)
        if not parsed:
            ctype = resp.headers.get("content-type", "")
            kind = "unsupported" if "html" in ctype else "malformed"
            raise FetchError(kind, f"not JSON ({ctype or 'no content-type'})", path=path, status=status)
        return Reply(status, body, resp.headers)
