"""`fleet_rows` then `bounded`, with the store doing the counting and the picking.

A fleet's open cycles grow with history (a dead dispatcher leaves them), and building a row for each
only to drop all but the newest few per driver made `/api/health` grow with them. Here the store
counts the cycle-only rows by driver, host and pid (the pid is what liveness asks of them, so each
group shares one state) and picks each driver's newest `per_driver` by the in-flight partial index;
Python builds only the rows it returns. The answer is `fleet_rows` then `bounded`'s, row for row
(tests/queries/test_health_bounded.py holds them equal).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlmodel import Session, col

from telemetry.queries.health import (
    _OPEN,
    DaemonHealth,
    Liveness,
    State,
    _flight,
    _never_beat,
    daemon_health,
    daemon_state,
)
from telemetry.store.models import Cycle, Daemon

__all__ = ["BoundedFleet", "bounded_fleet"]

_ROWS = _OPEN.add_columns(col(Cycle.id))


@dataclass(slots=True)
class BoundedFleet:
    """The rows shown, and counts over every row, shown or not (as `fleet_rows` has them)."""

    rows: list[DaemonHealth]
    states: dict[State, int]  # rows by state
    cycles_in_flight: int
    cycles_orphaned: int
    more_open_cycles: list[dict[str, Any]] = field(default_factory=list)

    def add(self, state: State, flight: bool, n: int = 1) -> None:
        self.states[state] = self.states.get(state, 0) + n
        if flight:
            self.cycles_orphaned += n if state == "down" else 0
            self.cycles_in_flight += 0 if state == "down" else n


def _open(driver: str, skip: Collection[str]) -> Any:
    q = _ROWS.where(col(Cycle.driver) == driver)
    return q.where(col(Cycle.cycle_id).not_in(list(skip))) if skip else q


def _newest_open(db: Session) -> dict[str, Any]:
    """The newest open cycle of each driver a heartbeat file speaks for (files cannot name theirs)."""
    drivers = db.execute(sa.select(col(Daemon.driver)).where(col(Daemon.source) == "file").distinct())
    out: dict[str, Any] = {}
    for (driver,) in drivers.all():
        got = db.execute(_open(driver, ()).order_by(col(Cycle.started_at).desc(), col(Cycle.id)).limit(1))
        row = got.first()
        if row is not None:
            out[driver] = row
    return out


def _attach(db: Session, m: DaemonHealth, alone: bool, skip: Collection[str]) -> Any:
    """The oldest open cycle that a daemon beating without naming one lives or dies with: one of
    its host, or of no host when it is its driver's only daemon."""
    host = col(Cycle.host) == m.host
    q = _open(m.driver, skip).where(sa.or_(host, col(Cycle.host).is_(None)) if alone else host)
    return db.execute(q.order_by(col(Cycle.started_at), col(Cycle.id)).limit(1)).first()


def _newest(db: Session, driver: str, skip: Collection[str], n: int) -> list[Any]:
    """The driver's `n` newest cycle-only rows, ties at the edge broken as `bounded` breaks them
    (by the row order: host, then the cycle's age and id)."""
    if n <= 0:
        return []
    newest = col(Cycle.started_at).desc()
    top = list(db.execute(_open(driver, skip).order_by(newest, col(Cycle.id)).limit(n)).all())
    if len(top) == n:
        edge = top[-1].started_at
        ties = db.execute(_open(driver, skip).where(col(Cycle.started_at) == edge)).all()
        top = [r for r in top if r.started_at != edge] + list(ties)
    by_row = sorted(top, key=lambda r: (r.host or "?", r.id))
    return sorted(by_row, key=lambda r: r.started_at, reverse=True)[:n]


def bounded_fleet(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness],
    per_driver: int,
) -> BoundedFleet:
    """Every daemon, each driver's newest `per_driver` open cycles no daemon claims, the rest
    counted per driver (`more_open_cycles`, each with a link to the cycles list)."""
    daemons = daemon_health(db, now, threshold_s, liveness, _newest_open(db))
    out = BoundedFleet([], {}, 0, 0)
    skip = {d.in_flight_cycle["cycle_id"] for d in daemons if d.in_flight_cycle}
    per: dict[str, int] = {}
    for d in daemons:
        per[d.driver] = per.get(d.driver, 0) + 1
    extra: list[tuple[DaemonHealth, Any]] = []
    for m in daemons:
        got = None if m.in_flight_cycle else _attach(db, m, per[m.driver] == 1, skip)
        if got is None:
            out.rows.append(m)
            out.add(m.state, m.in_flight_cycle is not None)
            continue
        skip.add(got.cycle_id)
        state, reason = daemon_state(m.heartbeat_age_s or 0.0, threshold_s, True, m.liveness)
        row = DaemonHealth(
            m.driver,
            m.host,
            m.pid,
            state,
            reason + "; the heartbeat does not name the cycle",
            m.source,
            m.last_heartbeat_at,
            m.heartbeat_age_s,
            _flight(got, now),
            m.liveness,
        )
        extra.append((row, got))
        out.add(state, True)
    _cycle_only(db, now, liveness, per_driver, skip, out, extra)
    extra.sort(key=lambda e: (e[0].driver, e[1].started_at, e[1].id))
    out.rows = sorted([*out.rows, *(r for r, _ in extra)], key=lambda d: (d.driver, d.host))
    return out


def _cycle_only(
    db: Session,
    now: datetime,
    liveness: Callable[[str, int | None], Liveness],
    per_driver: int,
    skip: Collection[str],
    out: BoundedFleet,
    extra: list[tuple[DaemonHealth, Any]],
) -> None:
    """Count the open cycles no daemon claims by driver, host and pid; keep each driver's newest."""
    n = sa.func.count()
    q = sa.select(col(Cycle.driver), col(Cycle.host), col(Cycle.pid), n).where(col(Cycle.ended_at).is_(None))
    if skip:
        q = q.where(col(Cycle.cycle_id).not_in(list(skip)))
    q = q.group_by(col(Cycle.driver), col(Cycle.host), col(Cycle.pid))
    totals: dict[str, list[int]] = {}  # driver: [cycles, of them down]
    for driver, host, pid, count in db.execute(q).all():
        down = liveness(host or "", pid) == "dead"
        out.add("down" if down else "unknown", True, count)
        t = totals.setdefault(driver, [0, 0])
        t[0] += count
        t[1] += count if down else 0
    for driver, (cycles, dead) in sorted(totals.items()):
        kept: Sequence[Any] = _newest(db, driver, skip, min(cycles, per_driver))
        rows = [_never_beat(c, now, liveness(c.host or "", c.pid)) for c in kept]
        extra.extend(zip(rows, kept, strict=True))
        if cycles <= per_driver:
            continue
        left = cycles - len(rows)
        orphaned = dead - sum(r.state == "down" for r in rows)
        out.more_open_cycles.append(
            {
                "driver": driver,
                "cycles": left,
                "orphaned": orphaned,
                "in_flight": left - orphaned,
                "cycles_url": f"/api/cycles?driver={quote(driver, safe='')}&in_flight=true",
            }
        )
