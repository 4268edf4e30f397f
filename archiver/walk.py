"""Fetch a whole session tree, breadth first, with bounded concurrency; never raises.

Structure is discovered level by level (so depth is the BFS distance), while each accepted
session's messages, diff and todo list are fetched at once as tasks: a wide tree is read in
parallel, capped by the client's in-flight limit. Whatever could not be fetched ends up in
``walk_errors``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from archiver.errors import FetchError, WalkError
from archiver.shape import RawJson as JsonObj
from archiver.tree import Node, TreePlan

if TYPE_CHECKING:  # the HTTP stack loads with the client, not with every reader of a snapshot
    from archiver.client import OpenCodeClient

__all__ = ["SessionSnapshot", "TreeSnapshot", "walk_tree"]


@dataclass
class SessionSnapshot:
    session_id: str
    parent_id: str | None
    depth: int
    session: JsonObj | None = None
    messages: list[JsonObj] = field(default_factory=list)
    messages_family: str = ""
    diff: list[JsonObj] | None = None
    todo: list[JsonObj] | None = None
    errors: list[WalkError] = field(default_factory=list)


@dataclass
class TreeSnapshot:
    root_id: str
    server_url: str
    opencode_version: str | None
    sessions: list[SessionSnapshot]
    walk_errors: list[WalkError]
    requests: int = 0
    origin: str = "server"  # or "mirror": folded from the event stream (tower.mirror)
    generation: int | None = None  # the OpenCode API generation probed (2: V2 shapes inside)

    @property
    def complete(self) -> bool:
        """Every session of the tree was fetched in full."""
        return bool(self.sessions) and not self.walk_errors


async def _guard(coro: Any, snap: SessionSnapshot, what: str) -> Any:
    try:
        return await coro
    except FetchError as err:
        snap.errors.append(WalkError.from_fetch(err, what, snap.session_id))
        return None


async def _version(client: OpenCodeClient, errors: list[WalkError]) -> str | None:
    try:
        return str((await client.health()).get("version") or "") or None
    except FetchError as err:
        errors.append(WalkError.from_fetch(err, "health", None))
        return None


async def _fill(client: OpenCodeClient, snap: SessionSnapshot, extras: bool) -> None:
    msgs = await _guard(client.messages(snap.session_id, snap.session), snap, "messages")
    if msgs is not None:
        snap.messages, snap.messages_family = msgs.items, msgs.family
        if msgs.empty_but_active:
            snap.errors.append(
                WalkError(
                    "empty_history",
                    "messages",
                    snap.session_id,
                    f"no messages from {'/'.join(msgs.tried) or 'any route'} although the session "
                    "shows tokens or cost",
                )
            )
    if extras:
        snap.diff, snap.todo = await asyncio.gather(
            _guard(client.diff(snap.session_id), snap, "diff"),
            _guard(client.todo(snap.session_id), snap, "todo"),
        )


async def _walk(
    client: OpenCodeClient, root_id: str, max_depth: int, max_sessions: int, extras: bool
) -> TreeSnapshot:
    plan = TreePlan(root_id, max_depth=max_depth, max_sessions=max_sessions)
    errors: list[WalkError] = []
    snaps: dict[str, SessionSnapshot] = {}
    root = SessionSnapshot(root_id, None, 0)
    # the server version and the root record are independent: one round trip, not two
    version, session = await asyncio.gather(
        _version(client, errors), _guard(client.session(root_id), root, "session")
    )
    root.session = session
    if root.session is None:
        return TreeSnapshot(root_id, client.base_url, version, [], errors + root.errors, client.http.requests)
    snaps[root_id] = root
    tasks = [asyncio.create_task(_fill(client, root, extras))]

    level: list[Node] = [plan.nodes[0]]
    while level:
        kids = await asyncio.gather(
            *(_guard(client.children(n.session_id), snaps[n.session_id], "children") for n in level)
        )
        nxt: list[Node] = []
        for node, listed in zip(level, kids, strict=True):
            if not listed:
                continue
            records = {str(c["id"]): c for c in listed if c.get("id")}
            declared = [(str(c["id"]), c.get("parentID")) for c in listed if c.get("id")]
            for child in plan.accept_children(node, declared):
                snap = SessionSnapshot(
                    child.session_id, child.parent_id, child.depth, session=records[child.session_id]
                )
                snaps[child.session_id] = snap
                tasks.append(asyncio.create_task(_fill(client, snap, extras)))
                nxt.append(child)
        level = nxt
    await asyncio.gather(*tasks)

    ordered = [snaps[n.session_id] for n in plan.nodes]
    all_errors = errors + plan.errors + [e for s in ordered for e in s.errors]
    gen = client.generation.major if client.generation is not None else None
    return TreeSnapshot(
        root_id, client.base_url, version, ordered, all_errors, client.http.requests, generation=gen
    )


async def walk_tree(
    client: OpenCodeClient,
    root_id: str,
    *,
    max_depth: int = 8,
    max_sessions: int = 5000,
    extras: bool = True,
) -> TreeSnapshot:
    """Every session under ``root_id`` with its messages; problems go to ``walk_errors``."""
    try:
        return await _walk(client, root_id, max_depth, max_sessions, extras)
    except Exception as exc:  # the walk never breaks its caller
        err = WalkError("transport", "walk", root_id, f"{type(exc).__name__}: {exc}")
        return TreeSnapshot(root_id, client.base_url, None, [], [err], client.http.requests)
