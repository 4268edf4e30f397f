"""Daemon health: ok, running_long_worker, down or unknown (DESIGN.md "running_long_worker").

`daemon_state` is pure; process liveness is passed in, so the rule is tested without processes
and the edge (`local_liveness`) is tested with a real one. `fleet_rows` adds what the cycle
table knows and heartbeats do not: a driver with a cycle in flight that never beat, and cycles
left open by a daemon that is down (orphaned: they will never finish on their own).
"""

from __future__ import annotations

import functools
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol

import sqlalchemy as sa
from sqlmodel import Session, col, select

from telemetry.queries.fleet_models import DaemonRecord, DaemonState, FlightCycle
from telemetry.store.models import Cycle, Daemon
from telemetry.timeutil import as_utc

__all__ = [
    "OPEN_CYCLES",
    "STATES",
    "DaemonHealth",
    "FleetRows",
    "Liveness",
    "cached_liveness",
    "daemon_health",
    "daemon_state",
    "fleet_rows",
    "flight_of",
    "local_liveness",
    "never_beat",
]

Liveness = Literal["alive", "dead", "unknown"]
State = DaemonState
# Best to worst: the fleet's status is its worst daemon's state.
STATES: tuple[State, ...] = ("ok", "running_long_worker", "unknown", "down")


def daemon_state(
    heartbeat_age_s: float, threshold_s: float, in_flight: bool, liveness: Liveness
) -> tuple[State, str]:
    """(state, reason) of one daemon. A dead process is down whatever its heartbeat says."""
    if liveness == "dead":
        return "down", "process is not running"
    if heartbeat_age_s <= threshold_s:
        return "ok", "heartbeat fresh"
    if in_flight and liveness == "alive":
        return "running_long_worker", "cycle in flight, heartbeat stale, process alive"
    if in_flight:
        return "unknown", "cycle in flight and heartbeat stale; process not on this host"
    return "unknown", "heartbeat stale"


@functools.lru_cache(maxsize=1)
def _this_host() -> frozenset[str]:
    """This host's names, looked up once: `getfqdn` asks the resolver, and a scrape asked it once
    per daemon (a DNS round trip each on a host without the name in /etc/hosts)."""
    return frozenset({socket.gethostname(), socket.getfqdn(), "localhost"})


def local_liveness(host: str, pid: int | None) -> Liveness:
    """Check the pid when the daemon runs on this host; otherwise nobody here can tell."""
    if pid is None or host not in _this_host():
        return "unknown"
    if not 0 < pid < 2**31:  # no process has it, and os.kill would fail (or signal a group)
        return "unknown"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead"
    except PermissionError:
        return "alive"  # exists, owned by someone else
    try:  # a zombie has exited; only its parent has not reaped it yet
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return "dead"
    except (OSError, IndexError):
        pass
    return "alive"


def cached_liveness() -> Callable[[str, int | None], Liveness]:
    """`local_liveness` asked once per process for one answer: the open cycles a dead daemon
    left share its pid, and each was checked again."""
    seen: dict[tuple[str, int | None], Liveness] = {}

    def liveness(host: str, pid: int | None) -> Liveness:
        key = (host, pid)
        if key not in seen:
            seen[key] = local_liveness(host, pid)
        return seen[key]

    return liveness


class _OpenCycle(Protocol):
    """What health reads of an open cycle: a `Cycle`, or a row of `OPEN_CYCLES`'s columns."""

    @property
    def cycle_id(self) -> str: ...
    @property
    def driver(self) -> str: ...
    @property
    def host(self) -> str | None: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def started_at(self) -> datetime: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def candidates_count(self) -> int | None: ...


# Open cycles as plain rows: a fleet may hold thousands that never finished, and a whole ORM object
# each (every column, identity map) was half of what the health check cost.
_OPEN_COLUMNS = (
    Cycle.cycle_id,
    Cycle.driver,
    Cycle.host,
    Cycle.pid,
    Cycle.started_at,
    Cycle.session_id,
    Cycle.candidates_count,
)
OPEN_CYCLES = sa.select(*map(col, _OPEN_COLUMNS)).where(col(Cycle.ended_at).is_(None))


@dataclass(frozen=True, slots=True)
class DaemonHealth:
    driver: str
    host: str
    pid: int | None
    state: State
    reason: str
    source: str  # http, file, or cycle (known only from a cycle in flight: never beat)
    last_heartbeat_at: datetime | None
    heartbeat_age_s: float | None
    in_flight_cycle: FlightCycle | None
    liveness: Liveness = "unknown"

    def record(self) -> DaemonRecord:
        """The row as the health answer shows it: its cycle orphaned when the daemon is down."""
        flight = self.in_flight_cycle
        return DaemonRecord(
            driver=self.driver,
            host=self.host,
            pid=self.pid,
            state=self.state,
            reason=self.reason,
            source=self.source,
            liveness=self.liveness,
            last_heartbeat_at=self.last_heartbeat_at.isoformat() if self.last_heartbeat_at else None,
            heartbeat_age_s=self.heartbeat_age_s,
            in_flight_cycle=flight.model_copy(update={"orphaned": self.state == "down"}) if flight else None,
        )


def _in_flight(
    db: Session, d: Daemon, now: datetime, newest_open: Mapping[str, _OpenCycle] | None
) -> FlightCycle | None:
    stmt = select(Cycle).where(Cycle.driver == d.driver)
    if d.in_flight_cycle_id:
        stmt = stmt.where(Cycle.cycle_id == d.in_flight_cycle_id)
    elif d.source == "file":
        # Heartbeat files cannot name their cycle: take the driver's newest open one, from the open
        # cycles read once for every daemon (an ORDER BY started_at would lead SQLite down the
        # driver's whole history).
        if newest_open is None:
            newest_open = _newest_open(db.execute(OPEN_CYCLES.where(col(Cycle.driver) == d.driver)).all())
        got = newest_open.get(d.driver)
        return flight_of(got, now) if got is not None else None
    else:
        return None
    c = db.exec(stmt.limit(1)).first()
    if c is None:  # the daemon names a cycle octel has not heard of (yet)
        return FlightCycle(
            cycle_id=d.in_flight_cycle_id,
            started_at=None,
            session_id=None,
            candidates_count=None,
            elapsed_s=None,
        )
    return None if c.ended_at is not None else flight_of(c, now)


def _newest_open(rows: Iterable[_OpenCycle]) -> dict[str, _OpenCycle]:
    """Each driver's newest open cycle."""
    out: dict[str, _OpenCycle] = {}
    for c in rows:
        best = out.get(c.driver)
        if best is None or c.started_at > best.started_at:  # one store: all naive or all aware
            out[c.driver] = c
    return out


def flight_of(c: _OpenCycle, now: datetime) -> FlightCycle:
    started = as_utc(c.started_at)
    return FlightCycle(
        cycle_id=c.cycle_id,
        started_at=started.isoformat(),
        session_id=c.session_id,
        candidates_count=c.candidates_count,
        elapsed_s=round((now - started).total_seconds(), 3),
    )


def daemon_health(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
    newest_open: Mapping[str, _OpenCycle] | None = None,
) -> list[DaemonHealth]:
    """Health of every known daemon, ordered by driver then host. `newest_open`: each driver's
    newest open cycle, when the caller has read the open cycles already."""
    out = []
    for d in db.exec(select(Daemon).order_by(col(Daemon.driver), col(Daemon.host))).all():
        beat = as_utc(d.last_heartbeat_at)
        age = max((now - beat).total_seconds(), 0.0)
        flight = _in_flight(db, d, now, newest_open)
        live = liveness(d.host, d.pid)
        state, reason = daemon_state(age, threshold_s, flight is not None, live)
        out.append(
            DaemonHealth(d.driver, d.host, d.pid, state, reason, d.source, beat, round(age, 3), flight, live)
        )
    return out


def never_beat(c: _OpenCycle, now: datetime, live: Liveness) -> DaemonHealth:
    """A driver known only from a cycle it began: no heartbeat, so only its pid can speak."""
    if live == "dead":
        state: State
        state, reason = "down", "cycle in flight, no heartbeat ever; its process is not running"
    elif live == "alive":
        state, reason = "unknown", "cycle in flight, no heartbeat ever; its process is alive"
    else:
        state, reason = "unknown", "cycle in flight, no heartbeat ever; process not on this host"
    return DaemonHealth(
        c.driver, c.host or "?", c.pid, state, reason, "cycle", None, None, flight_of(c, now), live
    )


@dataclass(frozen=True, slots=True)
class FleetRows:
    """Every daemon and every open cycle no daemon claims, as rows, with the open cycles counted."""

    rows: list[DaemonHealth]
    cycles_in_flight: int  # open cycles whose daemon is not down
    cycles_orphaned: int  # open cycles whose daemon is down


def fleet_rows(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
) -> FleetRows:
    """Every daemon, plus a row for every open cycle no daemon claims, ordered by driver, host."""
    open_: list[Any] = list(db.execute(OPEN_CYCLES).all())
    daemons = daemon_health(db, now, threshold_s, liveness, _newest_open(open_))
    claimed = {d.in_flight_cycle.cycle_id for d in daemons if d.in_flight_cycle}
    by_driver: dict[str, list[DaemonHealth]] = {}
    for d in daemons:
        by_driver.setdefault(d.driver, []).append(d)
    extra: list[DaemonHealth] = []
    orphaned = sum(1 for d in daemons if d.in_flight_cycle and d.state == "down")
    in_flight = sum(1 for d in daemons if d.in_flight_cycle and d.state != "down")
    for c in sorted(open_, key=lambda c: (c.driver, c.started_at)):  # one store: one kind of time
        if c.cycle_id in claimed:
            continue
        mates = [d for d in by_driver.get(c.driver, []) if c.host in (None, d.host)]
        if len(mates) == 1 and mates[0].in_flight_cycle is None and mates[0] in daemons:
            # Its daemon beats without naming the cycle: the cycle lives or dies with it.
            m = mates[0]
            state, reason = daemon_state(m.heartbeat_age_s or 0.0, threshold_s, True, m.liveness)
            if state == "down":
                orphaned += 1
            else:
                in_flight += 1
            reason += "; the heartbeat does not name the cycle"
            extra.append(
                DaemonHealth(
                    m.driver,
                    m.host,
                    m.pid,
                    state,
                    reason,
                    m.source,
                    m.last_heartbeat_at,
                    m.heartbeat_age_s,
                    flight_of(c, now),
                    m.liveness,
                )
            )
            daemons.remove(m)
            continue
        row = never_beat(c, now, liveness(c.host or "", c.pid))
        orphaned += row.state == "down"
        in_flight += row.state != "down"
        extra.append(row)
    return FleetRows(sorted([*daemons, *extra], key=lambda d: (d.driver, d.host)), in_flight, orphaned)
