"""OpenCode 2 (``/api/…`` only, 2.0 and later): the generation probe and the V2 adapter.

A 2.x server answers the 1.x root paths with the web UI's HTML and status 200, so the probe
trusts a 1.x health answer only when it is JSON (``JsonHttp`` refuses HTML), then asks
``/api/info``. The adapter reads V2's ``{data}`` / ``{data, cursor}`` envelopes, lists
children with ``?parentID=``, and keeps every record as the server sent it: unknown fields and
message types are archived, never rejected (V2's shapes are the archive's shapes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from archiver.errors import FetchError
from archiver.http import JsonHttp, Query
from archiver.shape import RawJson as JsonObj

__all__ = ["Generation", "V2Adapter", "probe"]

_MAX_PAGE = 200  # V2 refuses a message page above 200


@dataclass(frozen=True)
class Generation:
    """Which OpenCode API a server speaks: ``major`` 1 (1.x routes) or 2 (``/api`` only)."""

    major: int
    version: str | None
    via: str  # the route that answered the probe

    def to_dict(self) -> JsonObj:
        return {"generation": self.major, "version": self.version, "probe": self.via}


def _major(version: object) -> int:
    head = str(version or "").split(".", 1)[0]
    return max(int(head), 2) if head.isdigit() else 2


async def probe(http: JsonHttp) -> Generation:
    """The server's generation; ``FetchError`` when neither probe answers (a 401 from both says
    that authentication failed, naming the setting)."""
    try:
        body = (await http.request("GET", "/global/health")).body
    except FetchError as err:
        # HTML (a 2.x web UI), 404/405 or 401: not a 1.x server that lets us in; ask 2.x's route.
        # A transport error or a 5xx is the answer: the server is not reachable now.
        if err.error_kind not in ("unsupported", "malformed", "http_error", "not_found"):
            raise
    else:
        if isinstance(body, dict) and "healthy" in body:
            return Generation(1, str(body.get("version") or "") or None, "/global/health")
    body = (await http.request("GET", "/api/info")).body
    # the contract shows /api/info bare; the general rule wraps objects in {data}: read both
    info = body.get("data", body) if isinstance(body, dict) else None
    if not isinstance(info, dict) or "version" not in info:
        why = "neither /global/health nor /api/info answered as OpenCode"
        raise FetchError("unsupported", why, path="/api/info")
    return Generation(_major(info.get("version")), str(info["version"]), "/api/info")


def _data(body: Any, path: str) -> Any:
    if not isinstance(body, dict) or "data" not in body:
        raise FetchError("malformed", "expected a {data: …} envelope", path=path)
    return body["data"]


def _objects(items: Any, path: str) -> list[JsonObj]:
    if not isinstance(items, list):
        raise FetchError("malformed", "expected a JSON array in data", path=path)
    # one odd row is kept out, not fatal: a later version may add row kinds we cannot read
    return [x for x in items if isinstance(x, dict)]


def with_directory(session: JsonObj) -> JsonObj:
    """The V2 record plus the 1.x ``directory`` the index reads (from ``location.directory``)."""
    out = dict(session)
    loc = session.get("location")
    if "directory" not in out and isinstance(loc, dict) and isinstance(loc.get("directory"), str):
        out["directory"] = loc["directory"]
    return out


class V2Adapter:
    """Sessions, children, messages, diff, asks, replies, interrupt and delete on OpenCode 2."""

    family = "v2"

    def __init__(self, http: JsonHttp, *, page_size: int = 200, max_pages: int = 10_000):
        self._http = http
        self._page = max(1, min(page_size, _MAX_PAGE))
        self._max_pages = max_pages

    async def _pages(self, path: str, params: Query) -> list[JsonObj]:
        out: list[JsonObj] = []
        query: Query = {**params, "limit": self._page}
        seen: set[str] = set()
        for _ in range(self._max_pages):
            body = (await self._http.request("GET", path, query)).body
            items = _objects(_data(body, path), path)
            out.extend(items)
            cursor = body.get("cursor") if isinstance(body.get("cursor"), dict) else {}
            nxt = cursor.get("next")
            if not isinstance(nxt, str) or not nxt or not items:
                return out
            if nxt in seen:
                raise FetchError("paging", "cursor repeated", path=path)
            seen.add(nxt)
            # a cursor is passed back with the filters, never with `order` (the cursor holds it)
            query = {**{k: v for k, v in params.items() if k != "order"}, "limit": self._page, "cursor": nxt}
        raise FetchError("paging", f"more than {self._max_pages} pages", path=path)

    async def session(self, sid: str) -> JsonObj:
        path = f"/api/session/{sid}"
        record = _data((await self._http.request("GET", path)).body, path)
        if not isinstance(record, dict):
            raise FetchError("malformed", "expected a session object in data", path=path)
        return with_directory(record)

    async def children(self, sid: str) -> list[JsonObj]:
        # direct children only; the walk goes level by level
        listed = await self._pages("/api/session", {"parentID": sid, "order": "asc"})
        return [with_directory(s) for s in listed]

    async def messages(self, sid: str) -> list[JsonObj]:
        # the whole history, compacted parts included, oldest first
        return await self._pages(f"/api/session/{sid}/message", {"order": "asc"})

    async def diff(self, sid: str) -> list[JsonObj]:
        path = f"/api/session/{sid}/diff"
        return _objects(_data((await self._http.request("GET", path)).body, path), path)

    async def list_sessions(self) -> list[JsonObj]:
        return [with_directory(s) for s in await self._pages("/api/session", {})]

    async def active(self) -> JsonObj:
        """``{session id: {type: "running"}}`` for the executions this server process owns."""
        path = "/api/session/active"
        data = _data((await self._http.request("GET", path)).body, path)
        return data if isinstance(data, dict) else {}

    async def permissions(self, sid: str) -> list[JsonObj]:
        path = f"/api/session/{sid}/permission"
        return _objects(_data((await self._http.request("GET", path)).body, path), path)

    async def reply(self, sid: str, request_id: str, decision: str, message: str | None = None) -> None:
        """Answer an ask: ``decision`` is ``once``, ``always`` or ``reject``."""
        body: JsonObj = {"decision": decision, **({"message": message} if message else {})}
        path = f"/api/session/{sid}/permission/{request_id}/reply"
        await self._http.request("POST", path, json_body=body, idempotent=False)

    async def interrupt(self, sid: str) -> bool:
        path = f"/api/session/{sid}/interrupt"
        body = (await self._http.request("POST", path, idempotent=False)).body
        return isinstance(body, dict) and body.get("interrupted") is True

    async def delete(self, sid: str) -> bool:
        """Deletes the session and every descendant (V2 cascades): archive the tree first."""
        reply = await self._http.request("DELETE", f"/api/session/{sid}", idempotent=False)
        return reply.status in (200, 204)
