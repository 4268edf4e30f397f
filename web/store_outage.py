"""A store that cannot answer is a 503 with `Retry-After`, in the JSON error envelope.

During a PostgreSQL restart, or with the SQLite file's disk full, the driver raises from deep in
a route (or in the group commit's writer thread, whose error the route awaits). Unhandled, that
was a bare 500, or a dropped connection when it came from a middleware past the router (the
cycle fast path). Nothing is lost in either case, since the write did not commit; the client
should try again, and now it is told so: `503`, `Retry-After`, code `store_unavailable`.
`/api/health` says the same in its `status` (`store_unavailable`), for monitors that read only it.
"""

from __future__ import annotations

import errno
import logging
import sqlite3

from fastapi.responses import JSONResponse
from sqlalchemy import exc as sa_exc
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from web.errors import error_body

__all__ = ["RETRY_AFTER_S", "StoreOutage", "store_outage"]

log = logging.getLogger("octel")

RETRY_AFTER_S = 5
# a full disk, a quota, a read-only or failing filesystem: the archive files' writes
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO})


def store_outage(e: BaseException) -> bool:
    """Whether `e` (or one in its chain or group) says the store is out of reach now, rather
    than that the request was wrong."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError):
            return True
        if isinstance(x, sa_exc.DBAPIError) and x.connection_invalidated:
            return True
        if isinstance(x, sqlite3.OperationalError):
            return True
        if isinstance(x, OSError) and x.errno in _DISK_ERRNOS:
            return True
        if type(x).__module__.startswith("psycopg") and type(x).__name__ in (
            "OperationalError",
            "InterfaceError",
        ):
            return True
        if isinstance(x, BaseExceptionGroup):
            todo.extend(x.exceptions)
        todo += [x.__cause__, x.__context__]
    return False


def outage_response(path: str) -> JSONResponse:
    why = "the store is unavailable (restarting, unreachable or out of disk space); try again shortly"
    body = error_body("store_unavailable", why)
    if path == "/api/health":
        body["status"] = "store_unavailable"
    return JSONResponse(body, 503, headers={"Retry-After": str(RETRY_AFTER_S), "Cache-Control": "no-store"})


class StoreOutage:
    """Answers a store outage raised anywhere inside it with the 503, if nothing was sent yet."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as e:
            if started or not store_outage(e):
                raise
            log.warning(
                "octel: %s %s: the store is unavailable: %s", scope["method"], scope["path"], _first_line(e)
            )
            await outage_response(scope["path"])(scope, receive, send)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]
