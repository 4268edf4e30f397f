"""One session's live detector probe, fed from the event stream (pure: times are passed in).

Messages arrive as `message.updated` (the message record) and `message.part.updated` (each
part). A message is fed to the incremental `Probe` once, when it is complete (an assistant
message with `time.completed` or an error; a user message once a later message exists); the one
being written is only `peek`ed. Status changes and permission asks/replies are fed as they come;
a pending ask's wait is measured from the ask's own time, so a watcher that starts late still
sees how long it has been waiting.

Messages are dropped once fed: the probe keeps what the detectors need, nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from archiver.convert import message_from_opencode
from archiver.shape import RawJson, as_obj
from detectors import Probe
from detectors.findings import FindingDict
from detectors.model import PermissionEvent, StatusSample, StatusType
from detectors.thresholds import Thresholds
from tower.live import Ask

__all__ = ["SessionProbe"]

_MAX_BUFFERED = 64  # messages waiting to complete; past this the oldest is fed as it is
# A message being written changes with every part (tens a second); peeking at it costs a copy
# of the probe, so its findings are refreshed at most this often. A completed message, a status
# or a permission event is scored at once.
PEEK_S = 1.0


class _Pending(TypedDict):
    """A message not fed yet: its info and its parts by id, as they arrived."""

    info: Mapping[str, Any]
    parts: dict[str, Mapping[str, Any]]


class SessionProbe:
    def __init__(self, thresholds: Thresholds | None = None) -> None:
        self.probe = Probe(thresholds=thresholds)
        self._msgs: dict[str, _Pending] = {}  # not fed yet, by message id
        self._fed: set[str] = set()
        self._index = 0
        self._status: StatusType = "idle"
        self._cache: list[FindingDict] | None = None
        self._cache_at = float("-inf")
        self._head_moved = False  # the message in flight changed since the cache was made

    # -- inputs -----------------------------------------------------------------------------
    def message(self, info: Mapping[str, Any]) -> None:
        mid = info.get("id")
        if not isinstance(mid, str) or mid in self._fed:
            return  # a late update of a message already scored
        entry = self._msgs.setdefault(mid, {"info": info, "parts": {}})
        entry["info"] = info
        self._head_moved = True
        self._drain()

    def part(self, part: Mapping[str, Any]) -> None:
        mid, pid = part.get("messageID"), part.get("id")
        if not isinstance(mid, str) or not isinstance(pid, str) or mid in self._fed:
            return
        self._msgs.setdefault(mid, {"info": {"id": mid}, "parts": {}})["parts"][pid] = part
        self._head_moved = True

    def status(self, kind: StatusType, attempt: int, now: float, message: str, asks: tuple[str, ...]) -> None:
        self._status = kind
        self.probe.feed_status(StatusSample(kind, attempt, now, message, asks))
        self._cache = None

    def asked(self, ask: Ask, pending: tuple[str, ...]) -> None:
        ev = PermissionEvent(
            "asked", ask.request_id, ask.permission, ask.patterns, call_id=ask.call_id, t=ask.asked_at
        )
        self.probe.feed_permission(ev)
        # the wait starts at the ask's own time, not when the watcher saw it
        self.probe.feed_status(StatusSample(self._status, 0, ask.asked_at, "", pending))
        self._cache = None

    def replied(self, request_id: str, reply: str, now: float) -> None:
        self.probe.feed_permission(PermissionEvent("replied", request_id, reply=reply, t=now))
        self._cache = None

    # -- outputs ----------------------------------------------------------------------------
    def findings(self, now: float, pending: tuple[str, ...]) -> list[FindingDict]:
        """Non-healthy findings now, counting the message in flight; recomputed only when
        something arrived or an ask is waiting (its wait grows with the clock), and for a
        message in flight at most every `PEEK_S` seconds."""
        if pending:
            self.probe.feed_status(StatusSample(self._status, 0, now, "", pending))
        elif self._cache is not None and not self.behind(now):
            return self._cache
        head = self._head()
        found = self.probe.peek(head) if head is not None else self.probe.findings()
        self._cache, self._cache_at, self._head_moved = [f.to_dict() for f in found], now, False
        return self._cache

    def behind(self, now: float) -> bool:
        """The message in flight moved since the findings were made, and they are old enough
        to be made again."""
        return self._head_moved and now - self._cache_at >= PEEK_S

    def held_back(self) -> bool:
        """The findings do not count the newest parts of the message in flight yet."""
        return self._head_moved

    def _head(self) -> Any:
        if not self._msgs:
            return None
        mid = min(self._msgs)
        e = self._msgs[mid]
        return message_from_opencode(self._item(e), self._index)

    @staticmethod
    def _item(e: _Pending) -> RawJson:
        parts = e["parts"]
        return {"info": e["info"], "parts": [parts[k] for k in sorted(parts)]}

    def _complete(self, info: Mapping[str, Any], later: bool) -> bool:
        if info.get("role") == "assistant":
            return "completed" in as_obj(info.get("time")) or bool(info.get("error"))
        return later

    def _drain(self) -> None:
        while self._msgs:
            order = sorted(self._msgs)  # OpenCode message ids grow with time
            mid = order[0]
            e = self._msgs[mid]
            if not (self._complete(e["info"], len(order) > 1) or len(order) > _MAX_BUFFERED):
                return
            del self._msgs[mid]
            self._fed.add(mid)
            self._cache = None  # a completed message is scored at once
            msg = message_from_opencode(self._item(e), self._index)
            if msg is not None:
                self.probe.feed(msg)
                self._index += 1
