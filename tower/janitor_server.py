"""What the janitor reads from an OpenCode server, for either generation: the root trees and
their sessions (one listing), which sessions are busy, retrying or waiting on an ask now, and
how many messages each session holds.

1.x: ``GET /session`` lists every session, ``GET /session/status`` names the busy and retrying
ones, ``GET /permission`` the pending asks. OpenCode 2: ``/api/session`` (``OpenCodeClient``
picks the adapter by its probe), ``/api/session/active`` names the running executions, and the
asks are read per session (``/api/session/{id}/permission``), so only for the tree about to go.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from archiver.client import OpenCodeClient
from tower.janitor import ServerSession

__all__ = ["count_messages", "list_trees", "live_states", "trees_of"]


def _updated(s: Mapping[str, Any]) -> int | None:
    t = s.get("time")
    v = t.get("updated") if isinstance(t, Mapping) else None
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def trees_of(listed: Iterable[Mapping[str, Any]]) -> dict[str, list[ServerSession]]:
    """The listed sessions grouped by root (a session whose parent is not listed is a root of
    its own; a session is never in two trees), each tree root first."""
    by_id = {str(s["id"]): s for s in listed if isinstance(s.get("id"), str)}

    def root_of(sid: str) -> str:
        path = [sid]
        while True:
            parent = by_id[sid].get("parentID")
            if not isinstance(parent, str) or parent not in by_id:
                return sid
            if parent in path:  # parent links that loop: the loop's smallest id roots it
                return min(path[path.index(parent) :])
            path.append(parent)
            sid = parent

    trees: dict[str, list[ServerSession]] = {}
    for sid in sorted(by_id, key=lambda x: (root_of(x) != x, x)):
        trees.setdefault(root_of(sid), []).append(ServerSession(sid, _updated(by_id[sid])))
    return trees


async def list_trees(client: OpenCodeClient) -> dict[str, list[ServerSession]]:
    return trees_of(await client.list_sessions())


async def live_states(client: OpenCodeClient, asks_of: Iterable[str] = ()) -> dict[str, str]:
    """Session id -> ``busy``, ``retry``, ``running`` or ``ask`` for every session not idle now.
    On OpenCode 2 the asks are read for the sessions in ``asks_of`` only."""
    await client.probe()
    out: dict[str, str] = {}
    if client.is_v2:
        for sid, st in (await client.v2.active()).items():
            kind = st.get("type") if isinstance(st, Mapping) else None
            out[str(sid)] = str(kind or "running")
        ids = [s for s in asks_of if s not in out]
        pending = await asyncio.gather(*(client.v2.permissions(s) for s in ids))
        out.update({sid: "ask" for sid, asks in zip(ids, pending, strict=True) if asks})
        return out
    for sid, st in (await client.status()).items():
        kind = st.get("type") if isinstance(st, Mapping) else None
        if kind != "idle":
            out[str(sid)] = str(kind or "busy")
    for ask in await client.permissions():
        asking = ask.get("sessionID")
        if isinstance(asking, str):
            out[asking] = "ask"
    return out


async def count_messages(client: OpenCodeClient, sessions: Iterable[ServerSession]) -> list[ServerSession]:
    """The sessions with the number of messages the server holds now (read in full: a count
    that only a complete read gives is the one the archive is compared with)."""

    async def one(s: ServerSession) -> ServerSession:
        got = await client.messages(s.session_id)
        return ServerSession(s.session_id, s.updated_ms, len(got.items))

    return list(await asyncio.gather(*(one(s) for s in sessions)))
