"""What a watcher records that OpenCode never stores (pure state, fed events and polls).

Status history (busy, retry with attempt and next time, idle) and permission asks and replies,
per session; which root tree each session belongs to; and which trees have changed and gone
quiet, so they are due for archiving.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Recorder"]

_CHANGES = (
    "message.updated",
    "message.part.updated",
    "session.updated",
    "session.diff",
    "session.compacted",
    "session.error",
    "session.created",
)


def _d(v: object) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


@dataclass
class Recorder:
    parents: dict[str, str | None] = field(default_factory=dict)
    status: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    state: dict[str, str] = field(default_factory=dict)
    dirty: dict[str, float] = field(default_factory=dict)  # session -> last change time
    busy_since: dict[str, float] = field(default_factory=dict)  # session -> busy start
    archived: dict[str, float] = field(default_factory=dict)  # root -> last archive time
    deleted: set[str] = field(default_factory=set)

    # -- the tree ---------------------------------------------------------------------------
    def learn(self, sid: str, parent: str | None) -> None:
        self.parents[sid] = parent

    def unknown(self) -> set[str]:
        """Sessions whose ancestry is not known yet (the caller looks them up)."""
        seen = set(self.status) | set(self.permissions) | set(self.dirty) | set(self.state)
        out = {s for s in seen if s not in self.parents}
        out |= {p for p in self.parents.values() if p is not None and p not in self.parents}
        return out - self.deleted

    def root_of(self, sid: str) -> str | None:
        cur, hops = sid, 0
        while hops < 64:
            if cur not in self.parents:
                return None
            parent = self.parents[cur]
            if parent is None:
                return cur
            cur, hops = parent, hops + 1
        return None

    def tree(self, root: str) -> list[str]:
        return [s for s in self.parents if self.root_of(s) == root]

    # -- inputs -----------------------------------------------------------------------------
    def _status(self, sid: str, st: Mapping[str, Any], now: float) -> None:
        kind = str(st.get("type") or "")
        if kind not in ("busy", "retry", "idle"):
            return
        entry: dict[str, Any] = {"t": now, "type": kind}
        if kind == "retry":
            entry.update(attempt=st.get("attempt"), message=str(st.get("message") or ""), next=st.get("next"))
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
        self.dirty[sid] = now

    def on_event(self, event: Mapping[str, Any], now: float) -> None:
        kind = str(event.get("type") or "")
        props = _d(event.get("properties"))
        sid = props.get("sessionID")
        info = _d(props.get("info"))
        if not isinstance(sid, str):
            sid = info.get("id") if kind.startswith("session.") else None
        if not isinstance(sid, str) or not sid:
            return
        if kind in ("session.created", "session.updated") and info.get("id") == sid:
            parent = info.get("parentID")
            self.learn(sid, parent if isinstance(parent, str) else None)
        if kind == "session.deleted":
            self.deleted.add(sid)
            self.dirty.pop(sid, None)
            return
        if kind == "session.status":
            self._status(sid, _d(props.get("status")), now)
        elif kind == "session.idle":
            self._status(sid, {"type": "idle"}, now)
        elif kind.startswith("permission."):
            self.permissions.setdefault(sid, []).append({"received": int(now * 1000), "event": dict(event)})
            self.dirty[sid] = now
        elif kind in _CHANGES:
            self.dirty[sid] = now

    def on_status_poll(self, status: Mapping[str, Any], now: float) -> None:
        """A ``GET /session/status`` answer: listed sessions are busy/retry, the rest idle."""
        for sid, st in status.items():
            self._status(sid, _d(st), now)
        for sid, kind in list(self.state.items()):
            if kind != "idle" and sid not in status:
                self._status(sid, {"type": "idle"}, now)

    # -- decisions --------------------------------------------------------------------------
    def busy_roots(self) -> dict[str, float]:
        """Root -> since when some session of its tree has been busy."""
        out: dict[str, float] = {}
        for sid, since in self.busy_since.items():
            root = self.root_of(sid)
            if root is not None and root not in self.deleted:
                out[root] = min(since, out.get(root, since))
        return out

    def due(self, now: float, settle: float) -> list[str]:
        """Roots that changed since their last archive and have been quiet for ``settle``."""
        busy = self.busy_roots()
        latest: dict[str, float] = {}
        for sid, t in self.dirty.items():
            root = self.root_of(sid)
            if root is not None and root not in self.deleted:
                latest[root] = max(t, latest.get(root, t))
        return sorted(
            r
            for r, t in latest.items()
            if r not in busy and now - t >= settle and t > self.archived.get(r, -1.0)
        )

    def mark_archived(self, root: str, at: float) -> None:
        self.archived[root] = at

    def forget(self, now: float, after: float) -> list[str]:
        """Drop what is kept about trees archived more than ``after`` seconds ago and quiet
        since, so a long-running watch does not grow without end."""
        gone: list[str] = []
        for root, at in list(self.archived.items()):
            members = self.tree(root)
            if now - at < after or any(self.dirty.get(s, 0.0) > at for s in members):
                continue
            if any(s in self.busy_since for s in members):
                continue
            for s in members:
                for table in (self.status, self.permissions, self.state, self.dirty, self.parents):
                    table.pop(s, None)
            del self.archived[root]
            gone.append(root)
        return gone

    def history(self, root: str) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
        """Status history and permission events of every known session of a tree."""
        members = self.tree(root)
        return (
            {s: list(self.status.get(s, [])) for s in members if s in self.status},
            {s: list(self.permissions.get(s, [])) for s in members if s in self.permissions},
        )
