"""What a watcher records that OpenCode never stores (pure state, fed events and polls).

Status history (busy, retry with attempt and next time, idle) and permission asks and replies,
per session; which root tree each session belongs to; and which trees have changed and gone
quiet, so they are due for archiving.

A watcher runs for weeks and sees tens of thousands of trees, so nothing here walks everything
it has seen: each session's root and each root's members are indexes kept up to date as parents
are learned, the trees changed since their last archive are a set of their own, and forgetting
old trees pops a heap ordered by when each becomes forgettable. Work per event and per tick
depends on the trees in flight, never on how many went before.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

from archiver.shape import RawJson, as_obj

__all__ = ["PermissionEntry", "PermissionHistory", "Recorder", "StatusEntry", "StatusHistory"]


class StatusEntry(TypedDict):
    """One status change as an archive's ``status_history`` keeps it (``t`` in seconds)."""

    t: float
    type: str  # busy, retry or idle
    attempt: NotRequired[object]  # a retry's, as the server said them
    message: NotRequired[str]
    next: NotRequired[object]


class PermissionEntry(TypedDict):
    """One permission ask or reply as an archive's ``permission_events`` keeps it."""

    received: int  # milliseconds
    event: RawJson  # the server's event, as it came


StatusHistory = dict[str, list[StatusEntry]]  # by session
PermissionHistory = dict[str, list[PermissionEntry]]  # by session

_CHANGES = (
    "message.updated",
    "message.part.updated",
    "session.updated",
    "session.diff",
    "session.compacted",
    "session.error",
    "session.created",
)
_MAX_DEPTH = 64  # deeper parent chains are taken for a cycle in the links


@dataclass
class Recorder:
    forget_after: float = 6 * 3600.0  # seconds a quiet archived (or deleted) tree is kept
    parents: dict[str, str | None] = field(default_factory=dict)
    status: StatusHistory = field(default_factory=dict)
    permissions: PermissionHistory = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)
    dirty: dict[str, float] = field(default_factory=dict)  # session -> last change time
    busy_since: dict[str, float] = field(default_factory=dict)  # session -> busy start
    archived: dict[str, float] = field(default_factory=dict)  # root -> last archive time
    deleted: set[str] = field(default_factory=set)
    # indexes (derived from the above as it changes; never rebuilt by a scan)
    _children: dict[str, set[str]] = field(default_factory=dict)
    _root: dict[str, str] = field(default_factory=dict)  # session -> root, when the chain is known
    _members: dict[str, set[str]] = field(default_factory=dict)  # root -> sessions
    _latest: dict[str, float] = field(default_factory=dict)  # root -> last change of any member
    _pending: set[str] = field(default_factory=set)  # roots changed since their last archive
    _unresolved: set[str] = field(default_factory=set)  # seen, ancestry not known yet
    _expiry: list[tuple[float, str]] = field(default_factory=list)  # (quiet since, root or session)

    # -- the tree ---------------------------------------------------------------------------
    def learn(self, sid: str, parent: str | None) -> None:
        if sid in self.parents and self.parents[sid] == parent:
            return  # the common case (every session.updated): nothing moves
        old = self.parents.get(sid)
        if old is not None and old in self._children:
            self._children[old].discard(sid)
        self.parents[sid] = parent
        self._unresolved.discard(sid)
        if parent is not None:
            self._children.setdefault(parent, set()).add(sid)
            if parent not in self.parents and parent not in self.deleted:
                self._unresolved.add(parent)
        self._reroot(sid, self._walk_root(sid))

    def _walk_root(self, sid: str) -> str | None:
        """The root above ``sid`` by its parent links (depth is small), None while a link is
        unknown or the links loop."""
        cur: str | None = sid
        for _ in range(_MAX_DEPTH):
            if cur is None or cur not in self.parents:
                return None
            parent = self.parents[cur]
            if parent is None:
                return cur
            if parent == sid:
                return None
            cur = parent
        return None

    def _reroot(self, sid: str, root: str | None) -> None:
        """Give ``sid`` and everything under it its (new) root; touches only that subtree."""
        if self._root.get(sid) == root and root is not None:
            return
        stack, seen = [sid], {sid}
        while stack:
            s = stack.pop()
            before = self._root.pop(s, None)
            if before is not None and before in self._members:
                self._members[before].discard(s)
            if root is not None:
                self._root[s] = root
                self._members.setdefault(root, set()).add(s)
                if s in self.dirty:
                    self._changed(root, self.dirty[s])
            for c in self._children.get(s, ()):
                if c not in seen:
                    seen.add(c)
                    stack.append(c)

    def unknown(self) -> set[str]:
        """Sessions whose ancestry is not known yet (the caller looks them up)."""
        return self._unresolved - self.deleted

    def root_of(self, sid: str) -> str | None:
        return self._root.get(sid)

    def tree(self, root: str) -> list[str]:
        return list(self._members.get(root, ()))

    # -- inputs -----------------------------------------------------------------------------
    def _changed(self, root: str, t: float) -> None:
        if t > self._latest.get(root, float("-inf")):
            self._latest[root] = t
        if self._latest[root] > self.archived.get(root, -1.0):
            self._pending.add(root)

    def touch(self, sid: str, t: float) -> None:
        """Something of ``sid`` changed at ``t``."""
        if t > self.dirty.get(sid, float("-inf")):
            self.dirty[sid] = t
        if sid not in self.parents and sid not in self.deleted:
            self._unresolved.add(sid)
        root = self._root.get(sid)
        if root is not None:
            self._changed(root, t)

    def _status(self, sid: str, st: Mapping[str, Any], now: float) -> None:
        kind = str(st.get("type") or "")
        if kind == "running":  # OpenCode 2's poll says only "running": events said more
            if self.state.get(sid, "idle") != "idle":
                return
            kind = "busy"
        if kind not in ("busy", "retry", "idle"):
            return
        entry: StatusEntry = {"t": now, "type": kind}
        if kind == "retry":
            entry["attempt"], entry["message"], entry["next"] = (
                st.get("attempt"),
                str(st.get("message") or ""),
                st.get("next"),
            )
        hist = self.status.setdefault(sid, [])
        last = hist[-1] if hist else None
        if last is not None and {k: v for k, v in last.items() if k != "t"} == {
            k: v for k, v in entry.items() if k != "t"
        }:
            return  # the same status again (idle comes twice after an abort)
        hist.append(entry)
        self.state[sid] = kind
        if kind == "idle":
            self.busy_since.pop(sid, None)
        else:
            self.busy_since.setdefault(sid, now)
        self.touch(sid, now)

    def on_event(self, event: Mapping[str, Any], now: float) -> None:
        kind = str(event.get("type") or "")
        props = as_obj(event.get("properties"))
        sid = props.get("sessionID")
        info = as_obj(props.get("info"))
        if not isinstance(sid, str):
            sid = info.get("id") if kind.startswith("session.") else None
        if not isinstance(sid, str) or not sid:
            return
        if kind in ("session.created", "session.updated") and info.get("id") == sid:
            parent = info.get("parentID")
            self.learn(sid, parent if isinstance(parent, str) else None)
        if kind == "session.deleted":
            self.deleted.add(sid)
            self._unresolved.discard(sid)
            heapq.heappush(self._expiry, (now, sid))
            return
        if kind == "session.status":
            self._status(sid, as_obj(props.get("status")), now)
        elif kind == "session.idle":
            self._status(sid, {"type": "idle"}, now)
        elif kind.startswith("permission."):
            self.permissions.setdefault(sid, []).append({"received": int(now * 1000), "event": dict(event)})
            self.touch(sid, now)
        elif kind in _CHANGES:
            self.touch(sid, now)

    def on_status_poll(self, status: Mapping[str, Any], now: float) -> None:
        """A ``GET /session/status`` answer: listed sessions are busy/retry, the rest idle."""
        for sid, st in status.items():
            self._status(sid, as_obj(st), now)
        for sid in [s for s in self.busy_since if s not in status]:
            self._status(sid, {"type": "idle"}, now)

    # -- decisions --------------------------------------------------------------------------
    def busy_roots(self) -> dict[str, float]:
        """Root -> since when some session of its tree has been busy (only busy sessions are
        visited)."""
        out: dict[str, float] = {}
        for sid, since in self.busy_since.items():
            root = self._root.get(sid)
            if root is not None and root not in self.deleted:
                out[root] = min(since, out.get(root, since))
        return out

    def due(self, now: float, settle: float, held: Collection[str] = ()) -> list[str]:
        """Roots that changed since their last archive and have been quiet for ``settle``;
        ``held`` roots wait too (a session of theirs waits on an ask or runs a tool)."""
        if not self._pending:
            return []
        busy = self.busy_roots()
        out = []
        for r in list(self._pending):
            if r in self.deleted or self.parents.get(r, "?") is not None:
                self._pending.discard(r)  # no longer a root (or gone): nothing to archive
                continue
            if r not in busy and r not in held and now - self._latest[r] >= settle:
                out.append(r)
        return sorted(out)

    def mark_archived(self, root: str, at: float) -> None:
        self.archived[root] = at
        if self._latest.get(root, float("-inf")) <= at:
            self._pending.discard(root)
        heapq.heappush(self._expiry, (at, root))

    def forget(self, now: float, after: float | None = None) -> list[str]:
        """Drop what is kept about trees archived (or deleted) ``forget_after`` seconds ago and
        quiet since, so a long-running watch does not grow without end. Pops only the trees
        whose time has come."""
        return list(self.forget_trees(now, after))

    def forget_trees(self, now: float, after: float | None = None) -> dict[str, list[str]]:
        """``forget``, returning each forgotten root with the sessions it held."""
        keep = self.forget_after if after is None else after
        gone: dict[str, list[str]] = {}
        while self._expiry and self._expiry[0][0] + keep <= now:
            _at, key = heapq.heappop(self._expiry)
            if key not in self.parents and key not in self.deleted and key not in self.dirty:
                continue  # dropped already (a tree may have several entries)
            root = self._root.get(key, key)
            members = self._members.get(root, {key})
            last = self._latest.get(root, self.dirty.get(key, float("-inf")))
            if root in self.archived and self.archived[root] + keep > now:
                continue  # archived again since: its own newer entry decides
            waiting = root in self._pending and root not in self.deleted  # not archived yet
            busy = any(s in self.busy_since and s not in self.deleted for s in members)
            if waiting or busy or now - last < keep:
                heapq.heappush(self._expiry, (now, root))
                continue
            gone[root] = sorted(members)
            self._drop(root, members)
        return gone

    def _drop(self, root: str, members: set[str]) -> None:
        for s in list(members):
            for table in (self.status, self.permissions, self.state, self.dirty, self.busy_since):
                table.pop(s, None)
            parent = self.parents.pop(s, None)
            if parent is not None and parent in self._children:
                self._children[parent].discard(s)
            self._children.pop(s, None)
            self._root.pop(s, None)
            self.deleted.discard(s)
            self._unresolved.discard(s)
        for table2 in (self._members, self._latest, self.archived):
            table2.pop(root, None)
        self._pending.discard(root)

    def history(self, root: str) -> tuple[StatusHistory, PermissionHistory]:
        """Status history and permission events of every known session of a tree."""
        members = self._members.get(root, ())
        return (
            {s: list(self.status[s]) for s in members if s in self.status},
            {s: list(self.permissions[s]) for s in members if s in self.permissions},
        )

    def size(self) -> int:
        """Sessions held (a benchmark and the watcher's log read it)."""
        return len(self.parents) + len(self.dirty) + len(self.deleted)
