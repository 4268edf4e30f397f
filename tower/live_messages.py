"""The messages so far of every session a watcher follows, handed to the store a few at a time
(pure: fed by the mirror's notes, no I/O).

The mirror says which message each event changed (``touch``); once a tick ``take`` hands out
those due a write, each as the server's export gives it: a finished message at once, one still
being written (streamed text, a tool waiting on an ask) when first seen and then at most every
``WRITE_EVERY_S``. So a message is written when it changes, never the whole session each tick,
and the work of a tick follows the messages that changed, never the sessions seen.

Each session keeps its newest ``MAX_MESSAGES`` in the store: ``take`` hands out the older ones,
and those removed on the server, for deletion. ``bound_body`` cuts one message to at most
``MAX_MESSAGE_BYTES`` (the archive keeps it whole); the store calls it after redaction, so a
cut never splits a secret the redactor would have recognised whole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from archiver.shape import RawJson
from tower.mirror import Mirror
from tower.mirror_state import SessionMirror

__all__ = ["MAX_MESSAGES", "MAX_MESSAGE_BYTES", "LiveMessage", "LiveMessages", "MessageBatch", "bound_body"]

MAX_MESSAGES = 200  # newest messages a session keeps in the store
MAX_MESSAGE_BYTES = 64 * 1024  # JSON of one stored message, at most
WRITE_EVERY_S = 5.0  # a message still being written is stored again at most this often
SPILLED_EVERY_S = 30.0  # a session the mirror keeps in a file is read back at most this often
_CUTS = (8_000, 1_000, 200)  # characters a string keeps, tried in turn until the message fits


@dataclass(frozen=True)
class LiveMessage:
    session_id: str
    message_id: str
    position: int  # 0 for the session's first message seen, in the order they came
    role: str | None
    completed: bool
    body: RawJson  # {"info": …, "parts": […]}, as the server's export gives it


@dataclass
class MessageBatch:
    upserts: list[LiveMessage] = field(default_factory=list)
    deletes: list[tuple[str, str]] = field(default_factory=list)  # (session, message)
    cleared: list[str] = field(default_factory=list)  # sessions whose every message goes

    def __bool__(self) -> bool:
        return bool(self.upserts or self.deletes or self.cleared)


@dataclass
class _Kept:
    positions: dict[str, int] = field(default_factory=dict)  # message -> position
    stored: dict[str, int] = field(default_factory=dict)  # in the store: message -> position
    written_at: dict[str, float] = field(default_factory=dict)
    read_at: float = float("-inf")  # the last read of a spilled session


def _completed(info: Mapping[str, Any]) -> bool:
    """A user message is complete when sent; an assistant one when the server says it ended."""
    if info.get("role") != "assistant":
        return True
    t = info.get("time")
    return bool(info.get("error")) or (isinstance(t, Mapping) and t.get("completed") is not None)


class LiveMessages:
    def __init__(self, mirror: Mirror) -> None:
        self.mirror = mirror
        mirror.on_message = self.touch
        self.sessions: dict[str, _Kept] = {}
        self._dirty: dict[str, set[str]] = {}
        self._pending = MessageBatch()  # deletions the store could not take yet

    def touch(self, sid: str, mid: str) -> None:
        kept = self.sessions.get(sid)
        if kept is None:
            kept = self.sessions[sid] = _Kept()
        kept.positions.setdefault(mid, len(kept.positions))
        got = self._dirty.get(sid)
        if got is None:
            self._dirty[sid] = {mid}
        else:
            got.add(mid)

    def take(self, now: float) -> MessageBatch:
        """The messages due a write now, and those to delete; the rest wait for a later tick."""
        out, self._pending = self._pending, MessageBatch()
        dirty, self._dirty = self._dirty, {}
        for sid, mids in dirty.items():
            kept = self.sessions.get(sid)
            if kept is None:
                continue
            wait = self._session(sid, mids, kept, now, out)
            if wait:
                self._dirty.setdefault(sid, set()).update(wait)
        return out

    def _session(self, sid: str, mids: set[str], kept: _Kept, now: float, out: MessageBatch) -> set[str]:
        if sid in self.mirror.spilled:
            if now - kept.read_at < SPILLED_EVERY_S:
                return mids  # a read-back costs the whole file: not every tick
            kept.read_at = now
        s: SessionMirror | None = self.mirror.session(sid)
        if s is None:
            return set()
        wait: set[str] = set()
        oldest = len(kept.positions) - MAX_MESSAGES
        for mid in sorted(mids):
            pos = kept.positions[mid]
            msg = s.message(mid)
            if msg is None:
                if mid in s.removed and kept.stored.pop(mid, None) is not None:
                    out.deletes.append((sid, mid))
                continue  # removed, or seen only by its parts so far: its info will touch it
            done = _completed(msg["info"])
            last = kept.written_at.get(mid)
            if not done and last is not None and now - last < WRITE_EVERY_S:
                wait.add(mid)
                continue
            if pos < oldest:
                continue  # older than the newest the store keeps
            kept.written_at[mid], kept.stored[mid] = now, pos
            role = msg["info"].get("role")
            out.upserts.append(LiveMessage(sid, mid, pos, role if isinstance(role, str) else None, done, msg))
        if len(kept.stored) > MAX_MESSAGES:
            for mid, _ in sorted(kept.stored.items(), key=lambda x: x[1])[: len(kept.stored) - MAX_MESSAGES]:
                del kept.stored[mid]
                kept.written_at.pop(mid, None)
                out.deletes.append((sid, mid))
        return wait

    def failed(self, batch: MessageBatch) -> None:
        """The store did not take ``batch``: its messages are written again at the next tick,
        its deletions tried again."""
        for m in batch.upserts:
            kept = self.sessions.get(m.session_id)
            if kept is not None:
                kept.written_at.pop(m.message_id, None)
                self.touch(m.session_id, m.message_id)
        self._pending.deletes += batch.deletes
        self._pending.cleared += batch.cleared

    def archived(self, sids: Iterable[str]) -> MessageBatch:
        """The sessions' tree was archived: their stored messages go (the archive has them);
        messages that change from now on are stored again."""
        out = MessageBatch()
        for sid in sids:
            kept = self.sessions.get(sid)
            if kept is not None:
                kept.stored.clear()
                kept.written_at.clear()
            out.cleared.append(sid)
        return out

    def drop(self, sids: Iterable[str]) -> None:
        """Forget sessions (their tree was forgotten by the watcher)."""
        for sid in sids:
            self.sessions.pop(sid, None)
            self._dirty.pop(sid, None)


def _cut(obj: Any, limit: int) -> tuple[Any, int]:
    if isinstance(obj, str):
        if len(obj) <= limit:
            return obj, 0
        return f"{obj[:limit]}… [{len(obj) - limit} more characters in the archive]", 1
    if isinstance(obj, Mapping):
        n = 0
        d = {}
        for k, v in obj.items():
            d[k], c = _cut(v, limit)
            n += c
        return d, n
    if isinstance(obj, list):
        items = [_cut(v, limit) for v in obj]
        return [v for v, _ in items], sum(c for _, c in items)
    return obj, 0


def bound_body(body: Mapping[str, Any]) -> tuple[RawJson, bool]:
    """The message cut to at most ``MAX_MESSAGE_BYTES`` of JSON: long strings first, then the
    oldest parts; says whether anything was cut."""
    if len(orjson.dumps(body)) <= MAX_MESSAGE_BYTES:
        return dict(body), False
    out: RawJson = dict(body)
    for limit in _CUTS:
        out, _ = _cut(body, limit)
        if len(orjson.dumps(out)) <= MAX_MESSAGE_BYTES:
            return out, True
    parts = list(out.get("parts") or [])
    while parts and len(orjson.dumps({**out, "parts": parts})) > MAX_MESSAGE_BYTES:
        parts = parts[max(1, len(parts) // 4) :]  # keep the newest: they say what happens now
    info = out.get("info") if len(orjson.dumps(out.get("info"))) <= MAX_MESSAGE_BYTES // 2 else {}
    return {"info": info, "parts": parts}, True
