"""What one session is doing now, from the events and polls a watcher sees (pure: no I/O, no
clock; every time is passed in).

`Facts` holds what the events said (status, pending asks, running tools, compaction, error,
deleted, lost sight of); `apply` folds one event into it and `derive` names the state. Events
may come late, twice or out of order: status events older than the newest applied one are
stale (OpenCode event ids grow with time), an answered ask stays answered if its ask arrives
after the reply, a finished tool part is not started again by a late update.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from archiver.cut import cut
from archiver.shape import as_obj

__all__ = [
    "ABORTED",
    "STATES",
    "Ask",
    "Facts",
    "LiveState",
    "StateName",
    "ToolRun",
    "apply",
    "derive",
    "id_time",
    "set_status",
]

StateName = Literal[
    "busy",
    "retrying",
    "waiting_permission",
    "compacting",
    "running_tool",
    "idle",
    "interrupted",
    "errored",
    "deleted",
    "unknown",
]
STATES: tuple[StateName, ...] = get_args(StateName)
_ID = re.compile(r"^[a-z]{2,5}_([0-9a-f]{12})")
_PERIOD_MS = 1 << 36  # ids keep the low 36 bits of the creation time in ms
_MAX_SKEW_S = 86_400.0  # a decoded time further than this from the receipt is not trusted
_TEXT = 2000
ABORTED = "MessageAbortedError"  # the error an abort leaves: the run was interrupted, not failed


def id_time(ident: str, near: float) -> float | None:
    """The creation time (epoch seconds) an ascending OpenCode id carries (``per_``, ``evt_``,
    ``msg_``, ``prt_``: 12 hex digits of ``ms << 12 | counter``), taken in the 2**36 ms period
    nearest ``near``; None when the id does not carry one (descending ids, other shapes)."""
    m = _ID.match(ident) if isinstance(ident, str) else None
    if m is None:
        return None
    low = int(m.group(1), 16) >> 12
    base = int(near * 1000)
    cand = base - ((base - low) % _PERIOD_MS)
    if base - cand > _PERIOD_MS // 2:
        cand += _PERIOD_MS
    t = cand / 1000.0
    return t if abs(t - near) <= _MAX_SKEW_S else None


@dataclass(frozen=True, slots=True)
class Ask:
    request_id: str
    permission: str
    patterns: tuple[str, ...]
    asked_at: float
    call_id: str = ""


@dataclass(frozen=True, slots=True)
class ToolRun:
    part_id: str
    tool: str
    since: float


@dataclass
class Facts:
    status: str = "idle"  # busy | retry | idle, as OpenCode last said
    status_since: float | None = None
    busy_since: float | None = None
    attempt: int = 0
    next_try: float | None = None
    retry_message: str = ""
    asks: dict[str, Ask] = field(default_factory=dict)
    replied: set[str] = field(default_factory=set)
    tools: dict[str, ToolRun] = field(default_factory=dict)
    finished_parts: set[str] = field(default_factory=set)
    compacting_since: float | None = None
    error: str = ""
    error_at: float | None = None
    deleted_at: float | None = None
    unknown: str = ""  # why the watcher cannot tell (stream lost, server gone)
    unknown_at: float | None = None
    last_activity_at: float | None = None
    last_status_event: str = ""


@dataclass(frozen=True, slots=True)
class LiveState:
    state: StateName
    since: float | None
    reason: str = ""
    ask: Ask | None = None
    tool: ToolRun | None = None
    attempt: int = 0
    next_try: float | None = None


def derive(f: Facts) -> LiveState:
    """The one state a person should see, strongest signal first."""
    if f.deleted_at is not None:
        return LiveState("deleted", f.deleted_at)
    if f.unknown:
        return LiveState("unknown", f.unknown_at, reason=f.unknown)
    if f.asks:
        ask = min(f.asks.values(), key=lambda a: (a.asked_at, a.request_id))
        return LiveState("waiting_permission", ask.asked_at, ask=ask)
    if f.status == "retry":
        return LiveState(
            "retrying", f.status_since, reason=f.retry_message, attempt=f.attempt, next_try=f.next_try
        )
    if f.status == "busy":
        if f.compacting_since is not None:
            return LiveState("compacting", f.compacting_since)
        if f.tools:
            run = min(f.tools.values(), key=lambda r: (r.since, r.part_id))
            return LiveState("running_tool", run.since, tool=run)
        return LiveState("busy", f.busy_since)
    if f.error.startswith(ABORTED):  # stopped by an abort (1.x) or an interrupt (2.x)
        return LiveState("interrupted", f.error_at, reason=f.error)
    if f.error:
        return LiveState("errored", f.error_at, reason=f.error)
    return LiveState("idle", f.status_since)


def _s(v: object, cap: int = _TEXT) -> str:
    return cut(v, cap) if isinstance(v, str) else ""  # never the head of a secret: redacted later


def _num(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or v != v:
        return None
    return float(v)


def _ms(v: object) -> float | None:
    n = _num(v)
    return n / 1000.0 if n is not None and 0 < n < 1e15 else None


def set_status(f: Facts, st: Mapping[str, Any], now: float) -> None:
    """A status from an event or a poll (``{type, attempt, message, next}``; OpenCode 2's poll
    says ``running``, which keeps a retry or a busy the events told)."""
    kind = st.get("type")
    if kind == "running":
        if f.status != "idle" and not f.unknown:
            return
        kind = "busy"
    if kind not in ("busy", "retry", "idle"):
        return
    f.unknown, f.unknown_at = "", None
    if kind == "retry":
        attempt = int(_num(st.get("attempt")) or 0)
        if f.status != "retry" or attempt != f.attempt:
            f.status_since = now
        f.attempt, f.next_try = attempt, _ms(st.get("next"))
        f.retry_message = _s(st.get("message"))
    elif kind != f.status:
        f.status_since = now
    if kind == "idle":
        f.busy_since = None
        f.asks.clear()  # an ask dies with its run; OpenCode does not always say so
        f.tools.clear()
        f.compacting_since = None
    else:
        if f.busy_since is None:
            f.busy_since = now
            f.error, f.error_at = "", None  # a new run: an old error is history
    f.status = str(kind)


def _part(f: Facts, part: Mapping[str, Any], now: float) -> None:
    pid = _s(part.get("id"), 200)
    kind = part.get("type")
    if kind == "tool" and pid:
        state = as_obj(part.get("state"))
        status = state.get("status")
        if status in ("pending", "running") and pid not in f.finished_parts:
            start = _ms(as_obj(state.get("time")).get("start")) or now
            f.tools[pid] = ToolRun(pid, _s(part.get("tool"), 100) or "tool", start)
        elif status in ("completed", "error"):
            f.tools.pop(pid, None)
            f.finished_parts.add(pid)
    elif kind == "compaction" and f.compacting_since is None:
        f.compacting_since = now


def _ask(f: Facts, p: Mapping[str, Any], now: float) -> None:
    rid = _s(p.get("id"), 200)
    if not rid or rid in f.replied:
        return  # answered already (the reply came first, or the ask is repeated)
    pats = p.get("patterns") if "patterns" in p else p.get("resources")
    asked_at = id_time(rid, now) or now  # the ask's own time, even if we see it late
    if f.status == "idle":
        set_status(f, {"type": "busy"}, asked_at)  # only a running session asks; we missed that
    f.asks[rid] = Ask(
        rid,
        _s(p.get("permission"), 100) or _s(p.get("action"), 100) or "permission",
        tuple(_s(x) for x in (pats if isinstance(pats, list) else []) if isinstance(x, str))[:20],
        asked_at,
        _s(as_obj(p.get("tool")).get("callID"), 200) or _s(as_obj(p.get("source")).get("callID"), 200),
    )


def apply(f: Facts, event: Mapping[str, Any], now: float) -> bool:
    """Fold one OpenCode event (already unwrapped) into ``f``; False when it says nothing
    about a session's state (unknown types included, or stale). An event that counts shows
    the watcher sees the session again, so an earlier loss of sight is over."""
    if _apply(f, event, now):
        if f.unknown:
            f.unknown, f.unknown_at = "", None
        return True
    return False


def _apply(f: Facts, event: Mapping[str, Any], now: float) -> bool:
    kind = event.get("type")
    p = as_obj(event.get("properties")) or as_obj(event.get("data"))
    eid = _s(event.get("id"), 200)
    if kind == "session.deleted":
        f.deleted_at = f.deleted_at or now
        return True
    if kind in ("session.status", "session.idle"):
        if eid and f.last_status_event and eid <= f.last_status_event:
            return False  # stale or repeated
        f.last_status_event = eid or f.last_status_event
        set_status(f, as_obj(p.get("status")) if kind == "session.status" else {"type": "idle"}, now)
        return True
    if kind in ("permission.asked", "permission.v2.asked"):
        _ask(f, p, now)
        return True
    if kind in ("permission.replied", "permission.v2.replied"):
        rid = _s(p.get("requestID"), 200)
        f.replied.add(rid)
        f.asks.pop(rid, None)
        return True
    if kind in ("message.part.updated", "message.part.delta"):
        f.last_activity_at = now
        if kind == "message.part.updated":
            _part(f, as_obj(p.get("part")), now)
        return True
    if kind == "message.updated":
        f.last_activity_at = now
        if as_obj(p.get("info")).get("summary") is True and f.compacting_since is None:
            f.compacting_since = now
        return True
    if kind == "session.compacting":  # the tower's name for V2's session.compaction.started
        f.compacting_since = f.compacting_since or now
        return True
    if kind == "session.compacted":
        f.compacting_since = None
        return True
    if kind == "session.error":
        err = as_obj(p.get("error"))
        f.error = _s(err.get("name"), 200) or "error"
        msg = _s(as_obj(err.get("data")).get("message"), 300)
        f.error += f": {msg}" if msg else ""
        f.error_at = now
        return True
    return False
