"""Span times from archive times (Unix milliseconds) as integer nanoseconds (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from archiver.shape import as_obj

__all__ = ["doc_window", "ms_to_ns"]


def _num(v: object) -> float | None:
    t = type(v)  # exact types: a bool is no time, and this runs for every span
    return float(v) if (t is float or t is int) and v >= 0 else None  # type: ignore[operator, arg-type]


def ms_to_ns(ms: object, fallback: int) -> int:
    """Milliseconds as nanoseconds; ``fallback`` (nanoseconds) when the time is missing."""
    t = type(ms)
    if t is int:  # the common case (OpenCode's times): exact, no rounding to call
        return ms * 1_000_000 if ms >= 0 else fallback  # type: ignore[operator]
    if t is float and ms >= 0:  # type: ignore[operator]
        return round(ms * 1_000_000)  # type: ignore[operator]
    return fallback


def _iso_ms(text: object) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp() * 1000.0


def doc_window(doc: Mapping[str, Any]) -> tuple[int, int]:
    """(start, end) of a session: its record's times, else its messages', else when archived."""
    session, tot = as_obj(doc.get("session")), as_obj(doc.get("totals"))
    stime = as_obj(session.get("time"))
    starts = [v for v in (_num(stime.get("created")), _num(tot.get("first_created"))) if v is not None]
    ends = [v for v in (_num(stime.get("updated")), _num(tot.get("last_activity"))) if v is not None]
    if starts or ends:
        start = min(starts) if starts else min(ends)
    else:  # no recorded time at all: when it was archived (parsed only then: it costs)
        start = _iso_ms(doc.get("archived_at")) or 0.0
    end = max(ends) if ends else start
    return ms_to_ns(start, 0), ms_to_ns(max(end, start), 0)
