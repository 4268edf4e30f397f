"""The live metrics: sessions per server and state, the oldest unanswered ask, the busy session
quiet the longest, retry storms and live findings, read from the `live_session` rows.

Two queries (one grouped by server and state); the rows are the sessions running now (a few thousand
at most), never history. `fold_live` and `live_series` are pure.

`octel_live_server_info` names what each server runs (OpenCode generation and version), to join
the other live series on `server`.

The sessions of a server nobody follows (its watcher's lease ran out, `telemetry.queries.live_stale`)
count as `unknown` and drop out of every other live gauge and of the live findings: what their rows say
was true when the last watcher saw them.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import select as sa_select
from sqlmodel import Session, col, func, select

from detectors.findings import VERDICTS
from telemetry.queries.live_stale import unfollowed
from telemetry.store.live_models import LiveSession
from telemetry.timeutil import as_utc, utcnow
from tower.live import STATES

__all__ = ["LiveGroup", "LiveReads", "fold_live", "live_series", "read_live"]


@dataclass(frozen=True, slots=True)
class LiveReads:
    counts: tuple[tuple[str, str, int], ...] = ()  # server, state, sessions
    oldest_ask: tuple[tuple[str, float], ...] = ()  # server, unix time
    oldest_busy_activity: tuple[tuple[str, float], ...] = ()
    retry_attempt: tuple[tuple[str, float], ...] = ()  # server, highest attempt
    retry_since: tuple[tuple[str, float], ...] = ()  # server, oldest retry start
    findings: tuple[tuple[str, str, int], ...] = field(default=())  # detector, verdict, sessions
    servers: tuple[tuple[str, str, str], ...] = ()  # server, OpenCode generation, its version


def _ts(t: datetime | None) -> float | None:
    return as_utc(t).timestamp() if t is not None else None


_SINCE = LiveSession.state_since  # a busy session with no part yet: quiet since it went busy


def read_live(db: Session, now: datetime | None = None) -> LiveReads:
    """Two queries: each (server, state) group with what the live gauges need of it, and the
    findings of the sessions that are not healthy (of followed servers)."""
    gone = unfollowed(db, now or utcnow())
    groups = (
        db.connection()
        .execute(
            sa_select(
                col(LiveSession.server),
                col(LiveSession.state),
                func.count(),
                func.min(LiveSession.permission_asked_at),
                func.min(func.coalesce(LiveSession.last_activity_at, _SINCE)),
                func.max(LiveSession.retry_attempt),
                func.min(_SINCE),
                func.max(LiveSession.generation),
                func.max(LiveSession.server_version),
            ).group_by(LiveSession.server, LiveSession.state)
        )
        .all()
    )
    q = select(LiveSession.findings).where(col(LiveSession.verdict) != "healthy")
    if gone:
        q = q.where(col(LiveSession.server).not_in(list(gone)))
    findings = cast("list[list[dict[str, Any]] | None]", db.exec(q).all())
    return fold_live([_followed(LiveGroup(*g), gone) for g in groups], findings)


def _followed(g: LiveGroup, gone: Container[str]) -> LiveGroup:
    """The group as read now: all ``unknown``, with no extremes, when nobody follows its server."""
    if g.server not in gone:
        return g
    return LiveGroup(g.server, "unknown", g.sessions, None, None, None, None, g.generation, g.server_version)


@dataclass(frozen=True, slots=True)
class LiveGroup:
    """What one (server, state) group of live sessions holds: its size and its extremes."""

    server: str
    state: str
    sessions: int
    oldest_ask: datetime | None
    oldest_activity: datetime | None  # the last activity, or the time it went busy
    max_retry_attempt: int | None
    oldest_since: datetime | None
    generation: int | None = None  # what the group's server runs, as its rows say
    server_version: str | None = None


def fold_live(groups: Sequence[LiveGroup], findings: Iterable[list[dict[str, Any]] | None]) -> LiveReads:
    """The live reads from the grouped rows: each gauge reads the groups of its state (pure)."""
    found: dict[tuple[str, str], int] = {}
    for fs in findings:
        for f in fs or []:
            key = (str(f.get("detector")), str(f.get("verdict")))
            found[key] = found.get(key, 0) + 1
    of = {st: [g for g in groups if g.state == st] for st in ("waiting_permission", "busy", "retrying")}
    return LiveReads(
        counts=tuple((g.server, g.state, int(g.sessions)) for g in groups),
        oldest_ask=tuple(
            (g.server, t) for g in of["waiting_permission"] if (t := _ts(g.oldest_ask)) is not None
        ),
        oldest_busy_activity=tuple(
            (g.server, t) for g in of["busy"] if (t := _ts(g.oldest_activity)) is not None
        ),
        retry_attempt=tuple((g.server, float(g.max_retry_attempt or 0)) for g in of["retrying"]),
        retry_since=tuple((g.server, t) for g in of["retrying"] if (t := _ts(g.oldest_since)) is not None),
        findings=tuple((d, v, n) for (d, v), n in found.items()),
        servers=_servers(groups),
    )


def _servers(groups: Sequence[LiveGroup]) -> tuple[tuple[str, str, str], ...]:
    """(server, generation, version) of each server whose rows say what it runs."""
    seen: dict[str, tuple[int, str]] = {}
    for g in groups:
        if g.generation is not None:
            gen, ver = seen.get(g.server, (0, ""))
            seen[g.server] = (max(gen, int(g.generation)), max(ver, g.server_version or ""))
    return tuple(sorted((s, str(gen), ver) for s, (gen, ver) in seen.items()))


Row = tuple[tuple[str, ...], float]


def live_series(name: str, reads: LiveReads) -> list[Row]:
    """(label values, value) of one live metric; every state (and verdict) shown at 0 for each
    server (and detector) that has any, so a rule sees a series go up rather than appear."""
    if name == "octel_live_sessions":
        acc: dict[tuple[str, str], float] = {
            (s, st): 0.0 for s in {c[0] for c in reads.counts} for st in STATES
        }
        for s, st, n in reads.counts:  # a server nobody follows has several groups read unknown
            acc[(s, st)] = acc.get((s, st), 0.0) + float(n)
        return sorted(acc.items())
    if name == "octel_live_server_info":
        return [(s, 1.0) for s in reads.servers]
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
