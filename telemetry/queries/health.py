"""Daemon health: ok, running_long_worker, down or unknown (DESIGN.md "running_long_worker").

`daemon_state` is pure; process liveness is passed in, so the rule is tested without processes
and the edge (`local_liveness`) is tested with a real one.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlmodel import Session, col, select

from telemetry.store.models import Cycle, Daemon
from telemetry.timeutil import as_utc

__all__ = ["DaemonHealth", "Liveness", "daemon_health", "daemon_state", "local_liveness"]

Liveness = Literal["alive", "dead", "unknown"]
State = Literal["ok", "running_long_worker", "down", "unknown"]


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


def local_liveness(host: str, pid: int | None) -> Liveness:
    """Check the pid when the daemon runs on this host; otherwise nobody here can tell."""
    if pid is None or host not in {socket.gethostname(), socket.getfqdn(), "localhost"}:
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


@dataclass(frozen=True, slots=True)
class DaemonHealth:
    driver: str
    host: str
    pid: int | None
    state: State
    reason: str
    source: str
    last_heartbeat_at: datetime
    heartbeat_age_s: float
    in_flight_cycle: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__slots__}
        d["last_heartbeat_at"] = self.last_heartbeat_at.isoformat()
        return d


def _in_flight(db: Session, d: Daemon, now: datetime) -> dict[str, Any] | None:
    stmt = select(Cycle).where(Cycle.driver == d.driver)
    if d.in_flight_cycle_id:
        stmt = stmt.where(Cycle.cycle_id == d.in_flight_cycle_id)
    elif d.source == "file":
        # Heartbeat files cannot name their cycle: take the driver's newest open one. Open cycles
        # are few, so fetch them all through ix_cycle_open and pick here; an ORDER BY started_at
        # would lead SQLite down the driver's whole history instead.
        open_ = db.exec(stmt.where(col(Cycle.ended_at).is_(None))).all()
        return _flight(max(open_, key=lambda c: as_utc(c.started_at)), now) if open_ else None
    else:
        return None
    c = db.exec(stmt.limit(1)).first()
    if c is None:  # the daemon names a cycle octel has not heard of (yet)
        return {
            "cycle_id": d.in_flight_cycle_id,
            "started_at": None,
            "session_id": None,
            "candidates_count": None,
            "elapsed_s": None,
        }
    return None if c.ended_at is not None else _flight(c, now)


def _flight(c: Cycle, now: datetime) -> dict[str, Any]:
    started = as_utc(c.started_at)
    return {
        "cycle_id": c.cycle_id,
        "started_at": started.isoformat(),
        "session_id": c.session_id,
        "candidates_count": c.candidates_count,
        "elapsed_s": round((now - started).total_seconds(), 3),
    }


def daemon_health(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
) -> list[DaemonHealth]:
    """Health of every known daemon, ordered by driver then host."""
    out = []
    for d in db.exec(select(Daemon).order_by(col(Daemon.driver), col(Daemon.host))).all():
        beat = as_utc(d.last_heartbeat_at)
        age = max((now - beat).total_seconds(), 0.0)
        flight = _in_flight(db, d, now)
        state, reason = daemon_state(age, threshold_s, flight is not None, liveness(d.host, d.pid))
        out.append(
            DaemonHealth(d.driver, d.host, d.pid, state, reason, d.source, beat, round(age, 3), flight)
        )
    return out
