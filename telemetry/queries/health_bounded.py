"""The whole fleet's health with each driver's newest open cycles kept, the store doing the
counting and the picking.

A fleet's open cycles grow with history (a dead dispatcher leaves them), and building a row for each
only to drop all but the newest few per driver made `/api/health` grow with them. Here the store
counts the cycle-only rows by driver, host and pid (the pid is what liveness asks of them, so each
group shares one state) and picks each driver's newest `per_driver` by the in-flight partial index;
Python builds only the rows it returns. The answer is `fleet_rows` cut down to those, row for row
(tests/queries/test_health_bounded.py holds them equal to the plain way, `health_oracle`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import Row
from sqlmodel import Session, col

from telemetry.queries.fleet_models import OpenCyclesLeftOut
from telemetry.queries.health import (
    OPEN_CYCLES,
    DaemonHealth,
    Liveness,
    State,
    daemon_health,
    daemon_state,
    flight_of,
    never_beat,
)
from telemetry.store.models import Cycle, Daemon

__all__ = ["BoundedFleet", "bounded_fleet"]

_ROWS = OPEN_CYCLES.add_columns(col(Cycle.id))


@dataclass(slots=True)
class BoundedFleet:
    """The rows shown, and counts over every row, shown or not (as `fleet_rows` has them)."""

    rows: list[DaemonHealth]
    states: dict[State, int]  # rows by state
    cycles_in_flight: int
    cycles_orphaned: int
    more_open_cycles: list[OpenCyclesLeftOut] = field(default_factory=list)

    def add(self, state: State, flight: bool, n: int = 1) -> None:
        self.states[state] = self.states.get(state, 0) + n
        if flight:
            self.cycles_orphaned += n if state == "down" else 0
            self.cycles_in_flight += 0 if state == "down" else n


def _ranked(db: Session, per_driver: int) -> list[Any]:
    """Each driver's open cycles of rank `per_driver` plus twice the daemons or better, newest first
    (equal starts share a rank): enough for its newest `per_driver` once every daemon has claimed one
    cycle by name and one without, with any tied with the last of them. Ranked on the in-flight
    index alone; only the rows returned are read from the table, once for both uses."""
    rank = sa.func.rank().over(partition_by=col(Cycle.driver), order_by=col(Cycle.started_at).desc())
    ranked = sa.select(col(Cycle.id), rank.label("rank")).where(col(Cycle.ended_at).is_(None)).subquery()
    daemons = sa.select(sa.func.count()).select_from(Daemon).scalar_subquery()
    q = _ROWS.add_columns(ranked.c.rank).join(ranked, ranked.c.id == col(Cycle.id))
    return list(db.execute(q.where(ranked.c.rank <= per_driver + 2 * daemons)).all())


def _newest_open(ranked: Iterable[Row[Any]]) -> dict[str, Row[Any]]:
    """Each driver's newest open cycle: the one a heartbeat file speaks for (files cannot name it).
    Of equal starts, the first by id (the order the open cycles are read in)."""
    out: dict[str, Row[Any]] = {}
    for r in ranked:
        if r.rank == 1 and (r.driver not in out or r.id < out[r.driver].id):
            out[r.driver] = r
    return out


def _groups(db: Session, claimed: Collection[str]) -> list[list[Any]]:
    """[driver, host, pid, open cycles, the oldest's start] of the open cycles no daemon names."""
    c = Cycle
    q = sa.select(col(c.driver), col(c.host), col(c.pid), sa.func.count(), sa.func.min(col(c.started_at)))
    q = q.where(col(c.ended_at).is_(None))
    if claimed:
        q = q.where(col(c.cycle_id).not_in(list(claimed)))
    return [list(g) for g in db.execute(q.group_by(col(c.driver), col(c.host), col(c.pid))).all()]


def _attach(
    db: Session, daemons: Sequence[DaemonHealth], groups: Sequence[list[Any]], claimed: Collection[str]
) -> dict[int, Any]:
    """For each daemon beating without naming a cycle (by its index), the open cycle it lives or
    dies with: its driver's oldest unclaimed one of its host, or of no host when it is its
    driver's only daemon."""
    per: dict[str, int] = {}
    for d in daemons:
        per[d.driver] = per.get(d.driver, 0) + 1
    oldest: dict[tuple[str, str | None], Any] = {}
    for driver, host, _, _, first in groups:
        key = (driver, host)
        oldest[key] = first if key not in oldest else min(oldest[key], first)
    wanted: dict[int, list[tuple[str, str | None]]] = {}
    for i, m in enumerate(daemons):
        if not m.in_flight_cycle:
            keys = [(m.driver, m.host), *([(m.driver, None)] if per[m.driver] == 1 else [])]
            wanted[i] = [k for k in keys if k in oldest]
    at = {(k[0], oldest[k]) for ks in wanted.values() for k in ks}
    if not at:
        return {}
    picks = sa.or_(*(sa.and_(col(Cycle.driver) == d, col(Cycle.started_at) == t) for d, t in at))
    best: dict[tuple[str, str | None], Any] = {}
    for r in db.execute(_ROWS.where(picks)).all():
        key = (r.driver, r.host)
        if r.cycle_id in claimed or key not in oldest or r.started_at != oldest[key]:
            continue
        if key not in best or r.id < best[key].id:
            best[key] = r
    out = {}
    for i, keys in wanted.items():
        got = [best[k] for k in keys if k in best]
        if got:
            out[i] = min(got, key=lambda c: (c.started_at, c.id))
    return out


def _newest(rows: Iterable[Any], n: int) -> list[Any]:
    """A driver's `n` newest cycle-only rows of its ranked ones, ties at the edge broken as
    the whole fleet's rows have them (by the row order: host, then the cycle's age and id)."""
    by_row = sorted(rows, key=lambda r: (r.host or "?", r.id))
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
    ranked = _ranked(db, per_driver)
    daemons = daemon_health(db, now, threshold_s, liveness, _newest_open(ranked))
    out = BoundedFleet([], {}, 0, 0)
    claimed = {
        d.in_flight_cycle.cycle_id for d in daemons if d.in_flight_cycle and d.in_flight_cycle.cycle_id
    }
    groups = _groups(db, claimed)
    attached = _attach(db, daemons, groups, claimed)
    extra: list[tuple[DaemonHealth, Any]] = []
    for i, m in enumerate(daemons):
        got = attached.get(i)
        if got is None:
            out.rows.append(m)
            out.add(m.state, m.in_flight_cycle is not None)
            continue
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
            flight_of(got, now),
            m.liveness,
        )
        extra.append((row, got))
        out.add(state, True)
        for g in groups:
            if (g[0], g[1], g[2]) == (got.driver, got.host, got.pid):
                g[3] -= 1
    skip = claimed | {c.cycle_id for c in attached.values()}
    newest = [r for r in ranked if r.cycle_id not in skip]
    _cycle_only(now, liveness, per_driver, newest, groups, out, extra)
    extra.sort(key=lambda e: (e[0].driver, e[1].started_at, e[1].id))
    out.rows = sorted([*out.rows, *(r for r, _ in extra)], key=lambda d: (d.driver, d.host))
    return out


def _cycle_only(
    now: datetime,
    liveness: Callable[[str, int | None], Liveness],
    per_driver: int,
    newest: Iterable[Any],
    groups: Sequence[list[Any]],
    out: BoundedFleet,
    extra: list[tuple[DaemonHealth, Any]],
) -> None:
    """Count the open cycles no daemon claims by driver, host and pid; keep each driver's newest."""
    totals: dict[str, list[int]] = {}  # driver: [cycles, of them down]
    for driver, host, pid, count, _ in groups:
        down = liveness(host or "", pid) == "dead"
        out.add("down" if down else "unknown", True, count)
        t = totals.setdefault(driver, [0, 0])
        t[0] += count
        t[1] += count if down else 0
    ranked: dict[str, list[Any]] = {}
    for r in newest:
        ranked.setdefault(r.driver, []).append(r)
    for driver, (cycles, dead) in sorted(totals.items()):
        kept = _newest(ranked.get(driver, ()), per_driver)
        rows = [never_beat(c, now, liveness(c.host or "", c.pid)) for c in kept]
        extra.extend(zip(rows, kept, strict=True))
        if cycles <= per_driver:
            continue
        left = cycles - len(rows)
        orphaned = dead - sum(r.state == "down" for r in rows)
        out.more_open_cycles.append(
            OpenCyclesLeftOut(
                driver=driver,
                cycles=left,
                orphaned=orphaned,
                in_flight=left - orphaned,
                cycles_url=f"/api/cycles?driver={quote(driver, safe='')}&in_flight=true",
            )
        )
