"""One session's messages as the ``/event`` stream tells them (pure: fed events, no I/O).

A dispatcher may delete a session the moment it goes idle, before any archive could read it
from the server; the watcher keeps this copy so the tree can still be archived. Every message
and part is kept as the JSON bytes of its newest version (a dict costs several times its JSON
in memory), and each version carries the id of the event that brought it: OpenCode's event ids
ascend, so keeping the newest by id makes the result the same whatever order the events came
in, and whatever came twice. Streamed pieces of a part (``message.part.delta``) are kept
after the part's newest full version, in id order, and are superseded by the next one.

What the copy cannot vouch for is said by ``missing()``: a session first seen after it began,
pieces of a part never seen whole, parts of a message never seen, events lost while the stream
was down.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from archiver.errors import WalkError
from archiver.shape import RawJson, as_obj
from tower.messages_v2_back import IDLE, idle_info

__all__ = ["SessionMirror", "event_key", "message_of", "session_of"]


def _missing(kind: str, what: str, sid: str, message: str) -> WalkError:
    return WalkError(kind, what, sid, message, "/event")


def event_key(event: Mapping[str, Any], seq: int) -> str:
    """The order of an event: its id (ascending in OpenCode), else its arrival number, which
    sorts after every id (``~`` > ``e``), so an id-less newer event still wins."""
    eid = event.get("id")
    return eid if isinstance(eid, str) and eid else f"~{seq:015d}"


def session_of(event: Mapping[str, Any]) -> str | None:
    """The session an event is about, wherever this event type names it."""
    p = as_obj(event.get("properties"))
    sid = p.get("sessionID")
    if isinstance(sid, str) and sid:
        return sid
    for inner in (as_obj(p.get("info")), as_obj(p.get("part"))):
        s = inner.get("sessionID") if "sessionID" in inner else None
        if isinstance(s, str) and s:
            return s
    info = as_obj(p.get("info"))
    kind = event.get("type")
    if isinstance(kind, str) and kind.startswith("session.") and isinstance(info.get("id"), str):
        return str(info["id"])
    return None


def message_of(event: Mapping[str, Any]) -> str | None:
    """The message an event changes (its info, a part, a piece of a part, a removal)."""
    p = as_obj(event.get("properties"))
    kind = event.get("type")
    mid = as_obj(p.get("info")).get("id") if kind == "message.updated" else None
    if kind == "message.part.updated":
        mid = as_obj(p.get("part")).get("messageID")
    elif kind in ("message.part.delta", "message.removed", "message.part.removed"):
        mid = p.get("messageID")
    return mid if isinstance(mid, str) and mid else None


def _key(entry: bytes) -> bytes:
    return entry[: entry.index(b"\n")]


def _json(entry: bytes) -> Any:
    return orjson.loads(memoryview(entry)[entry.index(b"\n") + 1 :])


@dataclass(slots=True)
class SessionMirror:
    """Entries are ``key + b"\\n" + JSON`` in one bytes object: a tuple and a key string per
    part would cost more than most parts."""

    session_id: str
    session: bytes | None = None
    infos: dict[str, bytes] = field(default_factory=dict)  # message id -> newest info
    parts: dict[str, bytes] = field(default_factory=dict)  # part id -> newest (ids are unique)
    # part id -> sorted chunks [first key, last key, field, text] of pieces after its newest version
    pieces: dict[str, list[list[str]]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)  # message or part id -> key of removal
    created_seen: bool = False
    deleted: bool = False
    gaps: list[str] = field(default_factory=list)
    size: int = 0
    last_event_at: float = 0.0
    by_msg: dict[str, list[str]] = field(default_factory=dict)  # message id -> its part ids

    # -- folding ----------------------------------------------------------------------------
    def apply(self, event: Mapping[str, Any], key: str, now: float = 0.0) -> None:
        kind = event.get("type")
        p = as_obj(event.get("properties"))
        if kind not in ("session.deleted", "mirror.gap", "mirror.filled"):  # no change an archive misses
            self.last_event_at = max(self.last_event_at, now)
        if kind in ("session.created", "session.updated", "session.deleted"):
            info = as_obj(p.get("info"))
            if info.get("id") == self.session_id:
                self.session = self._newer(self.session, key, info)
            self.created_seen |= kind == "session.created"
            self.deleted |= kind == "session.deleted"
        elif kind == "message.updated":
            info = as_obj(p.get("info"))
            mid = info.get("id")
            if isinstance(mid, str) and not self._gone(mid, key):
                self.infos[mid] = self._newer(self.infos.get(mid), key, info)
        elif kind == "message.part.updated":
            self._part(as_obj(p.get("part")), key)
        elif kind == IDLE:  # an OpenCode 2 idle marker, read back only by a V2 snapshot
            marker = as_obj(p.get("message"))
            mid = marker.get("id")
            if isinstance(mid, str) and not self._gone(mid, key):
                self.infos[mid] = self._newer(self.infos.get(mid), key, idle_info(marker))
        elif kind == "message.part.delta":
            self._piece(p, key)
        elif kind == "message.removed":
            self._remove(p.get("messageID"), key, message=True)
        elif kind == "message.part.removed":
            self._remove(p.get("partID"), key, message=False)
        elif kind == "mirror.gap" and len(self.gaps) < 10:  # the stream was lost (octel's own note)
            self.gaps.append(str(p.get("why")))
        elif kind == "mirror.filled":  # read in full from the server after that: nothing missed
            self.created_seen, self.gaps = True, []

    def _newer(self, old: bytes | None, key: str, obj: Mapping[str, Any]) -> bytes:
        k = key.encode()
        if old is not None and _key(old) >= k:
            return old
        # one object of its own size (orjson's result keeps a 4 KiB buffer whatever its length)
        data = b"".join((k, b"\n", orjson.dumps(obj)))
        self.size += len(data) - (len(old) if old else 0)
        return data

    def _gone(self, oid: str, key: str) -> bool:
        return oid in self.removed and self.removed[oid] >= key

    def _part(self, part: Mapping[str, Any], key: str) -> None:
        pid, mid = part.get("id"), part.get("messageID")
        if (
            not isinstance(pid, str)
            or not isinstance(mid, str)
            or self._gone(pid, key)
            or self._gone(mid, key)
        ):
            return
        if pid not in self.parts:
            self.by_msg.setdefault(mid, []).append(pid)
        new = self.parts[pid] = self._newer(self.parts.get(pid), key, part)
        if _key(new) == key.encode():  # pieces older than this version are in it already
            chunks = self.pieces.get(pid)
            if chunks:
                keep = [c for c in chunks if c[0] > key]
                self.size -= sum(len(c[3]) for c in chunks) - sum(len(c[3]) for c in keep)
                self.pieces[pid] = keep

    def _piece(self, p: Mapping[str, Any], key: str) -> None:
        pid, mid, fld, delta = p.get("partID"), p.get("messageID"), p.get("field"), p.get("delta")
        if not (
            isinstance(pid, str) and isinstance(mid, str) and isinstance(fld, str) and isinstance(delta, str)
        ):
            return
        base = self.parts.get(pid)
        if (base is not None and _key(base) >= key.encode()) or self._gone(pid, key) or self._gone(mid, key):
            return
        chunks = self.pieces.setdefault(pid, [])
        if chunks and chunks[-1][1] < key and chunks[-1][2] == fld:
            chunks[-1][1] = key  # the usual case: the next piece, in order
            chunks[-1][3] += delta
        else:
            i = bisect.bisect_left([c[0] for c in chunks], key)
            if any(c[0] <= key <= c[1] for c in chunks):
                return  # seen already (a repeat)
            chunks.insert(i, [key, key, fld, delta])
        self.size += len(delta)

    def _remove(self, oid: object, key: str, *, message: bool) -> None:
        if not isinstance(oid, str):
            return
        self.removed[oid] = max(key, self.removed.get(oid, ""))
        k = key.encode()
        drop = list(self.by_msg.get(oid, ())) if message else [oid]
        for pid in drop:
            old = self.parts.get(pid)
            if old is not None and _key(old) < k:
                del self.parts[pid]
                self.size -= len(old)
                kept = self.by_msg.get(str(_json(old).get("messageID")), [])
                if pid in kept:
                    kept.remove(pid)
        if message and oid in self.infos and _key(self.infos[oid]) < k:
            self.size -= len(self.infos.pop(oid))

    # -- reading ----------------------------------------------------------------------------
    def record(self) -> RawJson | None:
        rec = _json(self.session) if self.session else None
        return rec if isinstance(rec, dict) else None

    def parent_id(self) -> str | None:
        rec = self.record()
        parent = rec.get("parentID") if rec else None
        return parent if isinstance(parent, str) else None

    def messages(self) -> list[RawJson]:
        """Every message seen whole, oldest first (ids ascend), with its parts in id order, as
        the server's export gives them."""
        return [m for mid in sorted(self.infos) if (m := self.message(mid)) is not None]

    def message(self, mid: str) -> RawJson | None:
        """One message as the server's export gives it (None until its info was seen), read
        through the index of its parts: the cost follows this message, not the session."""
        info = self.infos.get(mid)
        if info is None:
            return None
        parts = []
        for pid in sorted(self.by_msg.get(mid, ())):
            entry = self.parts.get(pid)
            if entry is None:
                continue
            part = _json(entry)
            for _first, _last, fld, text in self.pieces.get(pid, ()):
                before = part.get(fld)
                part[fld] = (before if isinstance(before, str) else "") + text
            parts.append(part)
        return {"info": _json(info), "parts": parts}

    def missing(self) -> list[WalkError]:
        sid = self.session_id
        out: list[WalkError] = []
        if not self.created_seen:
            out.append(
                _missing(
                    "truncated",
                    "messages",
                    sid,
                    "session first seen after it began: messages before that were not mirrored",
                )
            )
        if self.session is None:
            out.append(_missing("missing_meta", "session", sid, "no session record was seen"))
        orphans = sorted(m for m, pids in self.by_msg.items() if pids and m not in self.infos)
        if orphans:
            out.append(
                _missing(
                    "truncated",
                    "messages",
                    sid,
                    f"{len(orphans)} messages seen only by their parts, e.g. {orphans[0]}",
                )
            )
        unseen = sorted(p for p, c in self.pieces.items() if c and p not in self.parts)
        if unseen:
            out.append(
                _missing(
                    "truncated",
                    "messages",
                    sid,
                    f"{len(unseen)} parts seen only as streamed pieces, e.g. {unseen[0]}",
                )
            )
        out += [_missing("connection", "events", sid, g) for g in self.gaps]
        return out

    # -- spilling ---------------------------------------------------------------------------
    def dump(self) -> bytes:
        return orjson.dumps(
            {
                "session_id": self.session_id,
                "session": self.session.decode() if self.session else None,
                "infos": {m: e.decode() for m, e in self.infos.items()},
                "parts": {p: e.decode() for p, e in self.parts.items()},
                "pieces": self.pieces,
                "removed": self.removed,
                "created_seen": self.created_seen,
                "deleted": self.deleted,
                "gaps": self.gaps,
                "size": self.size,
                "last_event_at": self.last_event_at,
            }
        )

    @classmethod
    def load(cls, data: bytes) -> SessionMirror:
        d = orjson.loads(data)
        s = cls(
            d["session_id"],
            d["session"].encode() if d["session"] else None,
            {m: e.encode() for m, e in d["infos"].items()},
            {p: e.encode() for p, e in d["parts"].items()},
            d["pieces"],
            d["removed"],
            d["created_seen"],
            d["deleted"],
            d["gaps"],
            d["size"],
            d["last_event_at"],
        )
        for pid, entry in s.parts.items():  # the index is derived: rebuilt, not stored
            s.by_msg.setdefault(str(_json(entry).get("messageID")), []).append(pid)
        return s
