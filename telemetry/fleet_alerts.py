"""Alerts of the fleet: a daemon down, a long-running worker (DESIGN.md "running_long_worker").

`fleet_alerts` turns the fleet health (`telemetry.queries.health_view.fleet_health`, the same rule
the console, `/api/health` and `/metrics` apply) into the alerts that fire now; `FleetAlerts`
looks every ``alert_fleet_seconds`` from a thread of `octel serve` and emits them, with the
resolve of each that stopped firing (`tower.alert_dedup.Conditions`); the deliverer's
deduplication keeps repeats from being sent before the repeat interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from telemetry.queries.health_view import fleet_health
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from tower.alert import Alert, AlertSink
from tower.alert_dedup import Conditions, session_path

__all__ = ["FleetAlerts", "fleet_alerts"]

log = logging.getLogger(__name__)


def _path(driver: str, session_id: str | None) -> str:
    return session_path(session_id) if session_id else "/#/drivers?driver=" + quote(driver, safe="")


def fleet_alerts(daemons: Iterable[Mapping[str, Any]], threshold_s: float) -> list[Alert]:
    """The alerts firing for these daemons (as `fleet_health` gives them)."""
    out = []
    for d in daemons:
        driver, host, state = str(d["driver"]), str(d["host"]), d["state"]
        cycle = d.get("in_flight_cycle") or {}
        cid, sid = cycle.get("cycle_id"), cycle.get("session_id")
        labels = {"driver": driver, "host": host}
        if state == "down":
            what = f", leaving cycle {cid} orphaned" if cid else ""
            out.append(
                Alert(
                    f"daemon_down:{driver}:{host}",
                    "daemon_down",
                    "critical",
                    f"daemon {driver} on {host} is down ({d['reason']}){what}",
                    session_id=sid,
                    cycle_id=cid,
                    tree_id=sid,
                    path=_path(driver, sid),
                    labels=labels,
                )
            )
        elif state == "running_long_worker":
            age = d.get("heartbeat_age_s")
            out.append(
                Alert(
                    f"long_running:{driver}:{host}:{cid}",
                    "long_running",
                    "warning",
                    f"daemon {driver} on {host} runs cycle {cid} with no heartbeat for "
                    f"{age if age is not None else '?'} s (threshold {threshold_s:g} s), process alive",
                    session_id=sid,
                    cycle_id=cid,
                    tree_id=sid,
                    path=_path(driver, sid),
                    labels=labels,
                )
            )
    return out


class FleetAlerts:
    """Look at the fleet every ``interval`` seconds until `close`; each look emits."""

    def __init__(self, engine: Engine, sink: AlertSink, threshold_s: float, interval: float) -> None:
        self.engine, self.sink, self.threshold_s, self.interval = engine, sink, threshold_s, interval
        self.conditions = Conditions()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="octel-fleet-alerts", daemon=True)

    def look(self) -> list[Alert]:
        with session_scope(self.engine, write=False) as db:
            daemons = [d.model_dump() for d in fleet_health(db, utcnow(), self.threshold_s).daemons]
        out = self.conditions.look(fleet_alerts(daemons, self.threshold_s))
        for a in out:
            self.sink.emit(a)
        return out

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.look()
            except SQLAlchemyError as exc:  # the store away: look again next time
                log.warning("octel: fleet alerts not evaluated: %s", exc)
            self._stop.wait(self.interval)

    def start(self) -> FleetAlerts:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
