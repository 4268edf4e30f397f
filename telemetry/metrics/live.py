"""The live metrics: sessions per server and state, the oldest unanswered ask, the busy session
quiet the longest, retry storms and live findings, read from the `live_session` rows.

Five grouped queries on the state index; the rows are the sessions running now (a few thousand
at most), never history. `live_series` is pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlmodel import Session, col, func, select

from archiver.live import STATES
from detectors.findings import VERDICTS
from telemetry.store.live_models import LiveSession
from telemetry.timeutil import as_utc

__all__ = ["LiveReads", "live_series", "read_live"]


@dataclass(frozen=True, slots=True)
class LiveReads:
    counts: tuple[tuple[str, str, int], ...] = ()  # server, state, sessions
    oldest_ask: tuple[tuple[str, float], ...] = ()  # server, unix time
    oldest_busy_activity: tuple[tuple[str, float], ...] = ()
    retry_attempt: tuple[tuple[str, float], ...] = ()  # server, highest attempt
    retry_since: tuple[tuple[str, float], ...] = ()  # server, oldest retry start
    findings: tuple[tuple[str, str, int], ...] = field(default=())  # detector, verdict, sessions


def _ts(t: datetime | None) -> float | None:
    return as_utc(t).timestamp() if t is not None else None


_SINCE = LiveSession.state_since  # a busy session with no part yet: quiet since it went busy


def read_live(db: Session) -> LiveReads:
    by_state = db.exec(
        select(LiveSession.server, LiveSession.state, func.count()).group_by(
            LiveSession.server, LiveSession.state
        )
    ).all()
    asks = db.exec(
        select(LiveSession.server, func.min(LiveSession.permission_asked_at))
        .where(LiveSession.state == "waiting_permission")
        .group_by(LiveSession.server)
    ).all()
    busy = db.exec(
        select(
            LiveSession.server, func.min(func.coalesce(LiveSession.last_activity_at, LiveSession.state_since))
        )
        .where(LiveSession.state == "busy")
        .group_by(LiveSession.server)
    ).all()
    retry = db.exec(
        select(LiveSession.server, func.max(LiveSession.retry_attempt), func.min(LiveSession.state_since))
        .where(LiveSession.state == "retrying")
        .group_by(LiveSession.server)
    ).all()
    found: dict[tuple[str, str], int] = {}
    for fs in db.exec(select(LiveSession.findings).where(col(LiveSession.verdict) != "healthy")).all():
        for f in fs or []:
            key = (str(f.get("detector")), str(f.get("verdict")))
            found[key] = found.get(key, 0) + 1
    return LiveReads(
        counts=tuple((s, st, int(n)) for s, st, n in by_state),
        oldest_ask=tuple((s, t) for s, a in asks if (t := _ts(a)) is not None),
        oldest_busy_activity=tuple((s, t) for s, a in busy if (t := _ts(a)) is not None),
        retry_attempt=tuple((s, float(a or 0)) for s, a, _ in retry),
        retry_since=tuple((s, t) for s, _, a in retry if (t := _ts(a)) is not None),
        findings=tuple((d, v, n) for (d, v), n in found.items()),
    )


Row = tuple[tuple[str, ...], float]


def live_series(name: str, reads: LiveReads) -> list[Row]:
    """(label values, value) of one live metric; every state (and verdict) shown at 0 for each
    server (and detector) that has any, so a rule sees a series go up rather than appear."""
    if name == "octel_live_sessions":
        acc: dict[tuple[str, str], float] = {
            (s, st): 0.0 for s in {c[0] for c in reads.counts} for st in STATES
        }
        for s, st, n in reads.counts:
            acc[(s, st)] = float(n)
        return sorted(acc.items())
    if name == "octel_live_findings":
        facc: dict[tuple[str, str], float] = {
            (d, v): 0.0 for d in {f[0] for f in reads.findings} for v in VERDICTS if v != "healthy"
        }
        for d, v, n in reads.findings:
            facc[(d, v)] = float(n)
        return sorted(facc.items())
    pairs = {
        "octel_live_ask_oldest_timestamp_seconds": reads.oldest_ask,
        "octel_live_busy_oldest_activity_timestamp_seconds": reads.oldest_busy_activity,
        "octel_live_retry_attempt_max": reads.retry_attempt,
        "octel_live_retry_oldest_timestamp_seconds": reads.retry_since,
    }.get(name, ())
    return sorted(((s,), v) for s, v in pairs)
