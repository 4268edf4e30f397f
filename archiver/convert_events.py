"""OpenCode events and status polls -> status samples and permission events (pure).

Also the small, forgiving JSON readers both converters share: each returns an empty value of
the wanted type instead of raising, because a recorder must survive a server that changes shape.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from archiver.shape import as_obj
from detectors.model import PermissionEvent, StatusSample, StatusType

__all__ = [
    "MAX_OUTPUT",
    "MAX_TEXT",
    "READ_ERRORS",
    "as_float",
    "as_int",
    "as_list",
    "as_map",
    "as_str",
    "epoch_seconds",
    "merged_status",
    "overflow_errors",
    "permissions_from_opencode",
    "status_from_events",
    "status_from_opencode",
    "unwrap_event",
]

MAX_OUTPUT = 2000
MAX_TEXT = 8000
READ_ERRORS = (TypeError, ValueError, AttributeError, KeyError, RecursionError)
_STATUS_TYPES: dict[object, StatusType] = {"busy": "busy", "retry": "retry", "idle": "idle"}


def _l(v: object) -> Sequence[Any]:
    return v if isinstance(v, list | tuple) else ()


def _s(v: object, cap: int = MAX_TEXT) -> str:
    return v[:cap] if isinstance(v, str) else ""


def _i(v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0
    try:
        return int(v)
    except (ValueError, OverflowError):  # NaN, inf
        return 0


def _f(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if f == f and abs(f) != float("inf") else None


# Wrapper keys that hold the event itself, and fields that may hold its time, most specific first.
_WRAPPERS = ("event", "payload")
_TIME_KEYS = ("received", "timestamp", "time", "ts")


def epoch_seconds(v: object) -> float | None:
    """A time as epoch seconds: numbers in ms (OpenCode's unit) or s, or an ISO 8601 string."""
    f = _f(v)
    if f is None:
        if isinstance(v, str) and len(v) >= 10 and v[:4].isdigit():
            try:
                return datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
            except ValueError:
                return None
        return None
    return f / 1000.0 if f > 1e11 else f


def _when(d: Mapping[str, Any]) -> float | None:
    for k in _TIME_KEYS:
        if k in d:
            t = epoch_seconds(d[k])
            if t is not None:
                return t
    return None


def _event(raw: object) -> tuple[Mapping[str, Any], float | None]:
    """Unwrap `{received, event}` (recorder), `{timestamp, event}`, `{payload}` (/global/event)
    or a bare event; the time is the wrapper's, else the event's own, else its properties'."""
    d = as_obj(raw)
    ev = d
    for k in _WRAPPERS:
        inner = d.get(k)
        if isinstance(inner, Mapping):
            ev = inner
            # /global/event nests once more: {directory, payload: {type, properties}}
            deeper = inner.get("payload")
            if isinstance(deeper, Mapping) and "type" not in inner:
                ev = deeper
            break
    if not isinstance(ev.get("type", ""), str):  # a list or an object names no event: none
        ev = {k: v for k, v in ev.items() if k != "type"}
    t = _when(d)
    if t is None and ev is not d:
        t = _when(ev)
    if t is None:
        props = ev.get("properties")
        if isinstance(props, Mapping):
            t = _when(props)
    return ev, t


def _props(ev: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_obj(ev.get("properties")) or as_obj(ev.get("data"))


def overflow_errors(events: Iterable[object], session_id: str | None) -> list[tuple[float, str]]:
    """(receive time, message) of each ContextOverflowError event: it is never stored."""
    out = []
    for raw in events:
        ev, t = _event(raw)
        props = _props(ev)
        if ev.get("type") != "session.error" or t is None:
            continue
        if session_id is not None and props.get("sessionID") not in (None, session_id):
            continue
        err = as_obj(props.get("error"))
        if err.get("name") == "ContextOverflowError":
            out.append((t, _s(as_obj(err.get("data")).get("message"), MAX_OUTPUT)))
    return out


def _status(v: Mapping[str, Any], t: float | None, pending: tuple[str, ...]) -> StatusSample | None:
    kind = v.get("type")
    st = _STATUS_TYPES.get(kind) if isinstance(kind, str) else None
    if st is None:
        return None
    return StatusSample(st, _i(v.get("attempt")), t, _s(v.get("message"), MAX_OUTPUT), pending)


def status_from_opencode(samples: Iterable[object], *, session_id: str | None = None) -> list[StatusSample]:
    """Status history from recorder samples (`{t, status: {sid: status}, pending_permissions}`)
    or bare statuses (`{type, attempt, next}`). A session absent from a sample is idle, as
    `/session/status` leaves idle sessions out."""
    out: list[StatusSample] = []
    for raw in _l(list(samples) if not isinstance(samples, list | tuple) else samples):
        d = as_obj(raw)
        t = _f(d.get("t"))
        pending = tuple(x for x in _l(d.get("pending_permissions")) if isinstance(x, str))
        if "status" in d and "type" not in d:
            smap = as_obj(d.get("status"))
            if session_id is not None:
                v = as_obj(smap.get(session_id))
            else:
                v = next((as_obj(x) for x in smap.values() if isinstance(x, Mapping)), {})
            s = _status(v or {"type": "idle"}, t, pending)
        else:
            s = _status(d, t, pending)
        if s is not None:
            out.append(s)
    return out


def status_from_events(events: Iterable[object], *, session_id: str | None = None) -> list[StatusSample]:
    """Status changes from recorded events (`session.status`, `session.idle`); `t` is the
    recorder's receive time in epoch seconds. Idle is only ever seen here, never in polls."""
    out: list[StatusSample] = []
    for raw in events:
        ev, t = _event(raw)
        kind = ev.get("type")
        if kind not in ("session.status", "session.idle"):
            continue
        p = _props(ev)
        if session_id is not None and p.get("sessionID") != session_id:
            continue
        s = _status(as_obj(p.get("status")) if kind == "session.status" else {"type": "idle"}, t, ())
        if s is not None:
            out.append(s)
    return out


def permissions_from_opencode(
    events: Iterable[object], *, session_id: str | None = None
) -> list[PermissionEvent]:
    """Permission asks and replies from recorded events (classic and `permission.v2.*`)."""
    out: list[PermissionEvent] = []
    for raw in events:
        ev, t = _event(raw)
        kind = ev.get("type")
        if kind not in (
            "permission.asked",
            "permission.replied",
            "permission.v2.asked",
            "permission.v2.replied",
        ):
            continue
        p = _props(ev)
        if session_id is not None and p.get("sessionID") != session_id:
            continue
        if isinstance(kind, str) and kind.endswith("asked"):
            pats = p.get("patterns") if "patterns" in p else p.get("resources")
            out.append(
                PermissionEvent(
                    "asked",
                    _s(p.get("id")),
                    _s(p.get("permission")) or _s(p.get("action")),
                    tuple(x[:MAX_OUTPUT] for x in _l(pats) if isinstance(x, str)),
                    call_id=_s(as_obj(p.get("tool")).get("callID")),
                    t=t,
                )
            )
        else:
            out.append(PermissionEvent("replied", _s(p.get("requestID")), reply=_s(p.get("reply")), t=t))
    return out


def merged_status(samples: Sequence[Any], events: Sequence[Any], sid: str) -> list[StatusSample]:
    """Polls and status events on one clock: a recorder's poll times count from its start,
    which is when it received its first event."""
    polled = status_from_opencode(samples, session_id=sid)
    seen = status_from_events(events, session_id=sid)
    start = next((t for t in (_event(e)[1] for e in events) if t is not None), None)
    if not seen or not polled:
        return polled or seen
    if start is None:  # no clock to put the polls on: the events alone keep their order
        return seen
    shifted = [replace(s, t=s.t + start) for s in polled if s.t is not None]
    return sorted(shifted + seen, key=lambda s: s.t if s.t is not None else 0.0)


# Shared with archiver.convert under public names.
as_map, as_list, as_str, as_int, as_float, unwrap_event = as_obj, _l, _s, _i, _f, _event
