"""The two route families of OpenCode 1.x, one adapter each, with their envelope checks.

``ClassicAdapter`` reads ``/session/…`` (newest-first pages with a ``before`` cursor);
``ApiAdapter`` reads ``/api/…`` (``{data, cursor}`` envelopes). ``archiver.client`` picks
between them per capability.
"""

from __future__ import annotations

from typing import Any, Protocol

from archiver.errors import FetchError
from archiver.http import JsonHttp, Query
from archiver.shape import RawJson as JsonObj

__all__ = [
    "Adapter",
    "ApiAdapter",
    "ClassicAdapter",
    "has_activity",
    "need_list",
    "need_obj",
]


def need_list(body: Any, path: str) -> list[JsonObj]:
    if not isinstance(body, list) or not all(isinstance(x, dict) for x in body):
        raise FetchError("malformed", "expected a JSON array of objects", path=path)
    return body


def need_obj(body: Any, path: str) -> JsonObj:
    if not isinstance(body, dict):
        raise FetchError("malformed", "expected a JSON object", path=path)
    return body


def _check_messages(items: list[JsonObj], path: str) -> list[JsonObj]:
    for m in items:
        if not isinstance(m.get("info"), dict) or not isinstance(m.get("parts", []), list):
            raise FetchError("malformed", "message without info/parts", path=path)
    return items


def has_activity(session: JsonObj) -> bool:
    """True when the session record shows that messages must exist (spent tokens or money)."""
    tokens = session.get("tokens") or {}
    spent = [tokens.get("input"), tokens.get("output"), tokens.get("reasoning")]
    return bool(session.get("cost")) or any(isinstance(x, int | float) and x > 0 for x in spent)


class Adapter(Protocol):
    family: str

    async def session(self, sid: str) -> JsonObj: ...
    async def children(self, sid: str) -> list[JsonObj]: ...
    async def messages(self, sid: str) -> list[JsonObj]: ...


class ClassicAdapter:
    """``/session/…`` routes; messages paged newest-first with ``limit`` + ``before`` cursor."""

    family = "classic"

    def __init__(self, http: JsonHttp, *, page_size: int = 200, max_pages: int = 10_000):
        self._http = http
        self._page = page_size
        self._max_pages = max_pages

    async def session(self, sid: str) -> JsonObj:
        path = f"/session/{sid}"
        return need_obj((await self._http.request("GET", path)).body, path)

    async def children(self, sid: str) -> list[JsonObj]:
        path = f"/session/{sid}/children"
        return need_list((await self._http.request("GET", path)).body, path)

    async def messages(self, sid: str) -> list[JsonObj]:
        path = f"/session/{sid}/message"
        pages: list[list[JsonObj]] = []
        seen_cursors: set[str] = set()
        params: Query = {"limit": self._page}
        for _ in range(self._max_pages):
            reply = await self._http.request("GET", path, params)
            pages.append(_check_messages(need_list(reply.body, path), path))
            cursor = reply.headers.get("x-next-cursor")
            if not cursor or not reply.body:
                break
            if cursor in seen_cursors:
                raise FetchError("paging", "message cursor repeated", path=path)
            seen_cursors.add(cursor)
            params = {"limit": self._page, "before": cursor}
        else:
            raise FetchError("paging", f"more than {self._max_pages} pages", path=path)
        # pages run newest to oldest, each page oldest-first inside
        out: list[JsonObj] = []
        seen: set[str] = set()
        for page in reversed(pages):
            for m in page:
                mid = str(m["info"].get("id"))
                if mid not in seen:
                    seen.add(mid)
                    out.append(m)
        return out

    async def diff(self, sid: str) -> list[JsonObj]:
        path = f"/session/{sid}/diff"
        return need_list((await self._http.request("GET", path)).body, path)

    async def todo(self, sid: str) -> list[JsonObj]:
        path = f"/session/{sid}/todo"
        return need_list((await self._http.request("GET", path)).body, path)


def _data(body: Any, path: str) -> Any:
    if not isinstance(body, dict) or "data" not in body:
        raise FetchError("malformed", "expected a {data: …} envelope", path=path)
    return body["data"]


def _from_v2_session(s: JsonObj) -> JsonObj:
    out = dict(s)
    loc = s.get("location")
    if "directory" not in out and isinstance(loc, dict) and "directory" in loc:
        out["directory"] = loc["directory"]
    return out


class ApiAdapter:
    """``/api/…`` routes: ``{data, cursor{previous,next}}`` envelopes."""

    family = "api"

    def __init__(self, http: JsonHttp, *, page_size: int = 200, max_pages: int = 10_000):
        self._http = http
        self._page = page_size
        self._max_pages = max_pages

    async def session(self, sid: str) -> JsonObj:
        path = f"/api/session/{sid}"
        return _from_v2_session(need_obj(_data((await self._http.request("GET", path)).body, path), path))

    async def _pages(self, path: str) -> list[JsonObj]:
        out: list[JsonObj] = []
        params: Query = {"limit": self._page}
        seen: set[str] = set()
        for _ in range(self._max_pages):
            body = (await self._http.request("GET", path, params)).body
            items = need_list(_data(body, path), path)
            out.extend(items)
            nxt = (body.get("cursor") or {}).get("next")
            if not nxt or not items:
                return out
            if nxt in seen:
                raise FetchError("paging", "cursor repeated", path=path)
            seen.add(nxt)
            params = {"limit": self._page, "cursor": nxt}
        raise FetchError("paging", f"more than {self._max_pages} pages", path=path)

    async def children(self, sid: str) -> list[JsonObj]:
        # no children route in this generation: filter the flat list by parentID
        return [_from_v2_session(s) for s in await self._pages("/api/session") if s.get("parentID") == sid]

    async def messages(self, sid: str) -> list[JsonObj]:
        return await self._pages(f"/api/session/{sid}/message")
