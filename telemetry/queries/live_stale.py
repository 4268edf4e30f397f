"""Which followed servers nobody follows any more: a server whose watcher's lease ran out (the
watcher stopped, died or lost the store) keeps its live rows as they last were, and every door
(console, `sessions list --live`, `/api/live`, `/metrics`, `octel doctor`) reads them through
this one rule as `unknown (no watcher since …)`.

A server with no lease row was never followed under a lease (rows written by other means): its
rows are read as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session, col, func, select

from telemetry.store.action_models import WatchLease
from telemetry.store.live_models import LiveSession
from telemetry.timeutil import as_utc

__all__ = ["NO_WATCHER", "Following", "following", "no_watcher_reason", "unfollowed"]

NO_WATCHER = "no watcher since"


def unfollowed(db: Session, now: datetime) -> dict[str, datetime]:
    """Server -> when its lease ran out, for every server whose lease has run out at ``now``."""
    rows = db.exec(select(WatchLease.server, WatchLease.expires_at)).all()
    return {server: as_utc(until) for server, until in rows if as_utc(until) <= now}


def no_watcher_reason(since: datetime) -> str:
    return f"{NO_WATCHER} {as_utc(since).strftime('%Y-%m-%d %H:%M:%S')} UTC"


@dataclass(frozen=True)
class Following:
    followed: list[str]  # servers a watcher follows now
    stale: list[tuple[str, datetime, int]]  # server, no watcher since, live rows read unknown


def following(db: Session, now: datetime) -> Following:
    """Who follows what, for `octel doctor`: the servers followed now, and those nobody follows
    whose live rows are left (what the console would show as unknown)."""
    leases = {s: as_utc(e) for s, e in db.exec(select(WatchLease.server, WatchLease.expires_at)).all()}
    gone = {s: e for s, e in leases.items() if e <= now}
    rows: dict[str, int] = {}
    if gone:
        q = select(LiveSession.server, func.count()).where(col(LiveSession.server).in_(list(gone)))
        rows = dict(db.exec(q.group_by(LiveSession.server)).all())
    stale = sorted((s, e, rows[s]) for s, e in gone.items() if rows.get(s))
    return Following(sorted(s for s in leases if s not in gone), stale)
