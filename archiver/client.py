"""OpenCode client: one adapter per API generation, chosen by probing, then per capability.

The first read probes the server (``archiver.client_v2.probe``): an OpenCode 2 server is read
through ``V2Adapter`` only. On 1.x the classic routes (``/session``, ``/session/{id}/children``,
``/session/{id}/message``) and the ``/api/…`` generation answer the same questions in
different envelopes. On 1.18.33 the ``/api/`` message routes come back empty while the classic
ones hold every message, so the client tries the families in order per capability,
remembers which one the server really serves, and never settles for an empty history when
another family has one.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from typing import Any

import httpx

from archiver.client_families import Adapter, ApiAdapter, ClassicAdapter, has_activity, need_list, need_obj
from archiver.client_v2 import Generation, V2Adapter, probe
from archiver.errors import FetchError
from archiver.http import JsonHttp
from archiver.shape import RawJson as JsonObj

__all__ = ["ApiAdapter", "ClassicAdapter", "Messages", "OpenCodeClient", "has_activity"]


@dataclass
class Messages:
    items: list[JsonObj]
    family: str
    empty_but_active: bool = False
    tried: list[str] = field(default_factory=list)


def _same_session(items: list[JsonObj], sid: str, family: str) -> None:
    others = {
        str(i.get("sessionID"))
        for m in items
        if isinstance(i := m.get("info", m), dict) and i.get("sessionID") not in (None, sid)
    }
    if others:
        raise FetchError(
            "inconsistent",
            f"{family} messages of {sid} belong to {', '.join(sorted(others))}",
            path=f"/session/{sid}/message",
        )


class OpenCodeClient:
    """Reads sessions, children and messages from whichever route family serves them."""

    def __init__(
        self,
        http: httpx.AsyncClient | httpx.Client,
        base_url: str,
        *,
        prefer: tuple[str, ...] = ("classic", "api"),
        retries: int = 3,
        backoff: float = 0.05,
        max_concurrency: int = 8,
        page_size: int = 200,
        password: str | None = None,
        username: str = "opencode",
    ) -> None:
        auth = (username, password) if password else None
        self.http = JsonHttp(
            http, base_url, retries=retries, backoff=backoff, max_concurrency=max_concurrency, auth=auth
        )
        self.classic = ClassicAdapter(self.http, page_size=page_size)
        self.api = ApiAdapter(self.http, page_size=page_size)
        self.v2 = V2Adapter(self.http, page_size=page_size)
        # what the probe found (None until a probe answered); a failed probe is asked again
        self.generation: Generation | None = None
        self._probing: Any = None
        known: dict[str, Adapter] = {"classic": self.classic, "api": self.api}
        self._order: list[Adapter] = [known[name] for name in prefer]
        # capability -> adapters that did not serve it on this server
        self._unsupported: dict[str, set[str]] = {}

    @property
    def base_url(self) -> str:
        return self.http.base_url

    @property
    def is_v2(self) -> bool:
        """The probe found an OpenCode 2 (or later) server."""
        return self.generation is not None and self.generation.major >= 2

    async def probe(self) -> Generation:
        """The server's generation, probed once; concurrent callers share the one probe."""
        if self.generation is not None:
            return self.generation
        if self._probing is None:
            self._probing = asyncio.ensure_future(probe(self.http))
        task = self._probing
        try:
            found: Generation = await asyncio.shield(task)
        except FetchError:
            if self._probing is task:
                self._probing = None  # not cached: the next read asks again
            raise
        self.generation = found
        return found

    async def _ensure(self) -> None:
        """Probe before a read; a server that cannot be probed now is read as 1.x, as before,
        except when it refused the credentials (that is the answer for every read)."""
        try:
            await self.probe()
        except FetchError as err:
            if err.status in (401, 403):
                raise
            if err.error_kind in ("unsupported", "not_found", "malformed"):
                # neither probe route is served: not OpenCode 2; read it as 1.x, as before,
                # without asking again on every read
                self.generation = Generation(1, None, "")

    def chosen(self, capability: str) -> str | None:
        """The family currently used for a capability (None if none serves it)."""
        if self.is_v2:
            return self.v2.family
        bad = self._unsupported.get(capability, set())
        return next((a.family for a in self._order if a.family not in bad), None)

    def _adapters(self, capability: str) -> list[Adapter]:
        if self.is_v2:
            return [self.v2]
        bad = self._unsupported.get(capability, set())
        return [a for a in self._order if a.family not in bad]

    async def _first(self, capability: str, sid: str) -> Any:
        await self._ensure()
        last: FetchError | None = None
        for adapter in self._adapters(capability):
            try:
                return await getattr(adapter, capability)(sid)
            except FetchError as err:
                if err.error_kind != "unsupported":
                    raise
                self._unsupported.setdefault(capability, set()).add(adapter.family)
                last = err
        raise last or FetchError("unsupported", f"no route family serves {capability}")

    async def session(self, sid: str) -> JsonObj:
        result: JsonObj = await self._first("session", sid)
        return result

    async def children(self, sid: str) -> list[JsonObj]:
        result: list[JsonObj] = await self._first("children", sid)
        return result

    async def messages(self, sid: str, session: JsonObj | None = None) -> Messages:
        """Every message; when one family answers empty for an active session, ask the others."""
        await self._ensure()
        tried: list[str] = []
        first_error: FetchError | None = None
        for adapter in self._adapters("messages"):
            try:
                items = await adapter.messages(sid)
            except FetchError as err:
                if err.error_kind == "unsupported":
                    self._unsupported.setdefault("messages", set()).add(adapter.family)
                    continue
                first_error = first_error or err
                tried.append(adapter.family)
                continue
            tried.append(adapter.family)
            if items:
                _same_session(items, sid, adapter.family)
                return Messages(items, adapter.family, tried=tried)
            if first_error is None and session is not None and not has_activity(session):
                return Messages([], adapter.family, tried=tried)
        if first_error is not None:
            raise first_error
        active = session is None or has_activity(session)
        return Messages([], tried[0] if tried else "none", empty_but_active=active, tried=tried)

    async def diff(self, sid: str) -> list[JsonObj]:
        return await (self.v2 if self.is_v2 else self.classic).diff(sid)

    async def todo(self, sid: str) -> list[JsonObj] | None:
        """The session's todo list; None on OpenCode 2, which serves none over HTTP."""
        return None if self.is_v2 else await self.classic.todo(sid)

    async def health(self) -> JsonObj:
        """``{healthy, version, generation, probe}`` from whichever probe the server answered."""
        gen = await self.probe()
        if not gen.via:
            raise FetchError(
                "unsupported", "neither /global/health nor /api/info is served", path="/global/health"
            )
        return {"healthy": True, **gen.to_dict()}

    async def speaks_v2(self) -> bool:
        """Probe if not yet; a probe that fails for a passing fault reads the server as it was
        read before (1.x routes), a refused password is the answer."""
        try:
            await self._ensure()
        except FetchError as err:
            if err.status in (401, 403):
                raise
        return self.is_v2

    async def status(self) -> JsonObj:
        """``{session id: {type: busy|retry}}`` of every running session (V2: ``running``, all
        its ``/api/session/active`` says)."""
        if await self.speaks_v2():
            return {sid: {"type": "running"} for sid in await self.v2.active()}
        return need_obj((await self.http.request("GET", "/session/status")).body, "/session/status")

    async def permissions(self, running: list[str] | None = None) -> list[JsonObj]:
        """Every pending ask. V2 lists them per session: those of ``running`` (default: the
        sessions running now), since only a running session asks."""
        if not await self.speaks_v2():
            return need_list((await self.http.request("GET", "/permission")).body, "/permission")
        out: list[JsonObj] = []
        for sid in running if running is not None else list(await self.v2.active()):
            with contextlib.suppress(FetchError):  # deleted meanwhile: it asks nothing
                out += [{**p, "sessionID": p.get("sessionID", sid)} for p in await self.v2.permissions(sid)]
        return out

    async def list_sessions(self) -> list[JsonObj]:
        """Every session the server holds (roots and children, ``parentID`` on a child)."""
        if await self.speaks_v2():
            return await self.v2.list_sessions()
        return need_list((await self.http.request("GET", "/session")).body, "/session")

    async def delete(self, sid: str) -> bool:
        if self.is_v2:
            return await self.v2.delete(sid)
        body = (await self.http.request("DELETE", f"/session/{sid}", idempotent=False)).body
        return body is True

    async def abort(self, sid: str) -> bool:
        if self.is_v2:
            return await self.v2.interrupt(sid)
        body = (await self.http.request("POST", f"/session/{sid}/abort", idempotent=False)).body
        return body is True
