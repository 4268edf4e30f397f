"""The watcher's copy of every session's messages, from ``/event``, bounded in memory.

Each session is folded by ``tower.mirror_state.SessionMirror``. Past ``budget_bytes`` of
kept JSON the largest sessions are spilled to a file of their own under ``spill_dir`` (mode
0600): the state as one line, then each later event of that session appended as it comes, so
a spilled session costs no memory until it is read back (``session``), which folds the file.

A session deleted on the server is handed out by ``due`` (once, after a short grace so the
deletion of its children and the last events arrive) unless its tree was archived from the
server after its last event; ``snapshot`` turns a deleted subtree into the same
``TreeSnapshot`` a server walk returns, with what the mirror lacks as its walk errors.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from archiver.errors import WalkError
from archiver.walk import SessionSnapshot, TreeSnapshot
from tower.messages_v2_back import IDLE, v2_message, v2_session
from tower.mirror_state import SessionMirror, event_key, message_of, session_of

__all__ = ["Mirror"]

_SESSION_KINDS = ("session.created", "session.updated", "session.deleted")
_MESSAGE_KINDS = ("updated", "part.updated", "part.delta", "removed", "part.removed")
_KINDS = frozenset((*_SESSION_KINDS, IDLE, *(f"message.{k}" for k in _MESSAGE_KINDS)))
_SAFE_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")  # a session id may name a spill file
_MAX_DEPTH = 64


class Mirror:
    def __init__(self, spill_dir: Path | None = None, budget_bytes: int = 256 * 2**20) -> None:
        self.spill_dir, self.budget = spill_dir, budget_bytes
        self.live: dict[str, SessionMirror] = {}
        self.spilled: set[str] = set()
        self.parents: dict[str, str | None] = {}
        self.children: dict[str, set[str]] = {}
        self.deleted_at: dict[str, float] = {}
        self.archived_at: dict[str, float] = {}  # root -> last archive read from the server
        self.handed: set[str] = set()
        self.bytes = 0
        self.peak_bytes = 0
        self.spills = 0
        self._seq = 0
        self.last_key = ""  # the newest event id seen: a read from the server is at least this new
        self._fill: set[str] = set()  # sessions whose start, or some events, the stream missed
        self._gapped: set[str] = set()  # alive while the stream was down, quiet since
        self.on_message: Callable[[str, str], None] | None = None  # told of each message changed

    # -- inputs -----------------------------------------------------------------------------
    def on_event(self, event: Mapping[str, Any], now: float) -> None:
        kind = event.get("type")
        if kind not in _KINDS:
            return
        sid = session_of(event)
        if sid is None:
            return
        self._seq += 1
        key = event_key(event, self._seq)
        if isinstance(event.get("id"), str):  # the watcher's own notes have none
            self.last_key = max(self.last_key, key)
        if kind != "message.part.delta" and kind.startswith("session."):
            info = event.get("properties", {}).get("info")
            if isinstance(info, Mapping) and info.get("id") == sid:
                parent = info.get("parentID")
                if isinstance(parent, str) or sid not in self.parents:  # a parent is never undone
                    self._learn(sid, parent if isinstance(parent, str) else None)
            if kind == "session.deleted":
                self.deleted_at.setdefault(sid, now)
        self._fold(sid, event, key, now)

    def _learn(self, sid: str, parent: str | None) -> None:
        old = self.parents.get(sid)
        if old is not None and old != parent:
            self.children.get(old, set()).discard(sid)
        self.parents[sid] = parent
        if parent is not None:
            self.children.setdefault(parent, set()).add(sid)

    def _fold(self, sid: str, event: Mapping[str, Any], key: str, now: float) -> None:
        if self.on_message is not None and (mid := message_of(event)) is not None:
            self.on_message(sid, mid)
        if sid in self._gapped and not str(event.get("type")).startswith("mirror."):
            self._gapped.discard(sid)  # it moves again: read what the gap hid
            self._fill.add(sid)
        if sid in self.spilled:
            self._append(sid, orjson.dumps([key, now, event]))
            return
        s = self.live.get(sid)
        if s is None:
            s = self.live[sid] = SessionMirror(sid)
            if event.get("type") != "session.created":
                self._fill.add(sid)  # first seen mid-run: read what came before from the server
        before = s.size
        s.apply(event, key, now)
        self.bytes += s.size - before
        self.peak_bytes = max(self.peak_bytes, self.bytes)
        if self.bytes > self.budget and self.spill_dir is not None:
            self._spill_largest()

    def gap(self, why: str, now: float, recent: float = 600.0) -> None:
        """The stream was lost: every session not deleted may have missed events. Those active
        in the last ``recent`` seconds are read again from the server at once, the others when
        they next move."""
        note = {"type": "mirror.gap", "properties": {"why": why}}
        for sid in list(self.live) + list(self.spilled):
            if sid in self.deleted_at:
                continue
            s = self.live.get(sid)
            self._fold(sid, note, "", now)
            if s is not None and s.last_event_at >= now - recent:
                self._fill.add(sid)
            else:
                self._gapped.add(sid)

    def wanted(self) -> list[str]:
        """Sessions to read from the server, once each: first seen mid-run, or alive while the
        stream was down (``fill`` then folds what the server answers)."""
        out = sorted(s for s in self._fill if s not in self.deleted_at)
        self._fill.clear()
        return out

    def later(self, sids: Iterable[str]) -> None:
        """Sessions the server could not be read for: read when they next move."""
        self._gapped.update(s for s in sids if s not in self.deleted_at)

    def fill(
        self,
        sid: str,
        record: Mapping[str, Any] | None,
        messages: Sequence[Mapping[str, Any]],
        key: str,
        now: float,
        idles: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        """Fold a read of the server made after the event ``key``: its versions count as just
        after that event, so any later event still wins; the session's start and gaps are then
        known."""
        key = key + "~" if key else ""  # nothing seen yet: every event to come is newer
        self._gapped.discard(sid)
        parent = record.get("parentID") if record is not None else None
        if isinstance(parent, str):
            self._learn(sid, parent)
        if record is not None:
            self._fold(sid, {"type": "session.updated", "properties": {"info": record}}, key, now)
        for m in messages:
            info = m.get("info")
            if isinstance(info, Mapping):
                self._fold(sid, {"type": "message.updated", "properties": {"info": info}}, key, now)
            for part in m.get("parts") or ():
                if isinstance(part, Mapping):
                    self._fold(sid, {"type": "message.part.updated", "properties": {"part": part}}, key, now)
        for marker in idles:  # OpenCode 2's execution outcomes, kept apart from the messages
            self._fold(sid, {"type": IDLE, "properties": {"sessionID": sid, "message": marker}}, key, now)
        self._fold(sid, {"type": "mirror.filled", "properties": {}}, key, now)

    def archived(self, root: str, at: float) -> None:
        """The tree of ``root`` was archived from the server at ``at``."""
        self.archived_at[root] = at

    # -- spilling ---------------------------------------------------------------------------
    def _path(self, sid: str) -> Path:
        assert self.spill_dir is not None and _SAFE_ID.match(sid)
        return self.spill_dir / f"{sid}.jsonl"

    def _append(self, sid: str, line: bytes) -> None:
        fd = os.open(self._path(sid), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line + b"\n")
        finally:
            os.close(fd)

    def _spill_largest(self) -> None:
        assert self.spill_dir is not None
        self.spill_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sid in sorted(self.live, key=lambda s: self.live[s].size, reverse=True):
            if self.bytes <= self.budget // 2:  # room to grow before the next spill
                break
            if not _SAFE_ID.match(sid):
                continue  # not a name a file may take: stays in memory
            s = self.live.pop(sid)
            with contextlib.suppress(FileNotFoundError):
                self._path(sid).unlink()
            self._append(sid, s.dump())
            self.spilled.add(sid)
            self.bytes -= s.size
            self.spills += 1

    # -- reading ----------------------------------------------------------------------------
    def session(self, sid: str) -> SessionMirror | None:
        """The session's mirror, read back from its file when spilled."""
        if sid not in self.spilled:
            return self.live.get(sid)
        lines = self._path(sid).read_bytes().splitlines()
        s = SessionMirror.load(lines[0])
        for line in lines[1:]:
            key, now, event = orjson.loads(line)
            s.apply(event, key, now)
        return s

    def root_of(self, sid: str) -> str:
        cur = sid
        for _ in range(_MAX_DEPTH):
            parent = self.parents.get(cur)
            if parent is None or parent == sid:
                return cur
            cur = parent
        return cur

    def due(self, now: float, grace: float = 0.5) -> list[str]:
        """Deleted sessions at the top of a deleted subtree, whose events came after the last
        server archive of their tree: each is handed out once."""
        out = []
        for sid, at in list(self.deleted_at.items()):
            if sid in self.handed or now - at < grace:
                continue
            parent = self.parents.get(sid)
            if parent is not None and parent in self.deleted_at:
                self.handed.add(sid)  # archived with its parent's subtree
                continue
            self.handed.add(sid)
            archived = self.archived_at.get(self.root_of(sid), float("-inf"))
            members = list(self._sessions(sid))
            if not members or any(m.last_event_at > archived for m in members):
                out.append(sid)
        return sorted(out)

    def _sessions(self, top: str) -> Iterable[SessionMirror]:
        for sid, _p, _d in self._bfs(top):
            s = self.session(sid)
            if s is not None:
                yield s

    def _bfs(self, top: str) -> list[tuple[str, str | None, int]]:
        depth = 0
        cur = top
        while self.parents.get(cur) is not None and depth < _MAX_DEPTH:
            cur = str(self.parents[cur])
            depth += 1
        level: list[tuple[str, str | None, int]] = [(top, self.parents.get(top), depth)]
        out, seen = list(level[:0]), {top}
        while level:
            out += level
            nxt: list[tuple[str, str | None, int]] = []
            for sid, _p, d in level:
                for c in sorted(self.children.get(sid, ())):
                    if c not in seen:
                        seen.add(c)
                        nxt.append((c, sid, d + 1))
            level = nxt
        return out

    def snapshot(
        self, top: str, server_url: str, version: str | None = None, generation: int | None = None
    ) -> TreeSnapshot:
        """The subtree under ``top`` as a server walk would return it, from the mirror; what
        the mirror lacks becomes walk errors, so the archive says it is not complete. From an
        OpenCode 2 server (``generation`` 2) the records and messages are V2's own again."""
        v2 = (generation or 1) >= 2
        sessions: list[SessionSnapshot] = []
        errors: list[WalkError] = []
        for sid, parent, depth in self._bfs(top):
            s = self.session(sid)
            snap = SessionSnapshot(sid, parent, depth)
            if s is None:
                snap.errors.append(
                    WalkError("truncated", "messages", sid, "no event of this session was seen")
                )
            else:
                snap.session = s.record() or {"id": sid, **({"parentID": parent} if parent else {})}
                snap.messages = s.messages()
                if v2:
                    snap.session = v2_session(snap.session)
                    snap.messages = [v2_message(m) for m in snap.messages]
                snap.messages_family = "events"
                snap.errors += s.missing()
            errors += snap.errors
            sessions.append(snap)
        rec = sessions[0].session if sessions else None
        ver = version or (str(rec.get("version")) if rec and rec.get("version") else None)
        return TreeSnapshot(
            self.root_of(top), server_url, ver, sessions, errors, 0, origin="mirror", generation=generation
        )

    def drop(self, session_ids: Iterable[str]) -> None:
        """Forget sessions (their tree was forgotten by the watcher)."""
        for sid in session_ids:
            s = self.live.pop(sid, None)
            if s is not None:
                self.bytes -= s.size
            if sid in self.spilled:
                self.spilled.discard(sid)
                with contextlib.suppress(OSError):
                    self._path(sid).unlink()
            parent = self.parents.pop(sid, None)
            if parent is not None:
                self.children.get(parent, set()).discard(sid)
            self.children.pop(sid, None)
            for table in (self.deleted_at, self.archived_at):
                table.pop(sid, None)
            for kept in (self.handed, self._fill, self._gapped):
                kept.discard(sid)
