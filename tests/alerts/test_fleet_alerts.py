"""A daemon down and a long-running worker, from the store's fleet health to alerts: they fire
while the fleet shows them and resolve when it no longer does."""

from __future__ import annotations

import os
import subprocess
from datetime import timedelta

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from telemetry.fleet_alerts import FleetAlerts, fleet_alerts
from telemetry.store.models import Daemon
from telemetry.timeutil import utcnow
from tower.alert import Alert


class Sink:
    def __init__(self) -> None:
        self.got: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.got.append(alert)


def _daemon(state: str, cycle: dict[str, object] | None = None) -> dict[str, object]:
    return {
        "driver": "d1",
        "host": "h1",
        "state": state,
        "reason": "why",
        "in_flight_cycle": cycle,
        "heartbeat_age_s": 900.0,
    }


def test_only_down_and_long_running_daemons_alert_and_link_their_session() -> None:
    cyc = {"cycle_id": "c1", "session_id": "ses_9"}
    got = fleet_alerts(
        [_daemon("ok"), _daemon("unknown"), _daemon("down", cyc), _daemon("running_long_worker", cyc)], 600
    )
    assert [(a.kind, a.severity, a.key) for a in got] == [
        ("daemon_down", "critical", "daemon_down:d1:h1"),
        ("long_running", "warning", "long_running:d1:h1:c1"),
    ]
    assert all(a.path == "/#/session/ses_9" and a.cycle_id == "c1" and a.tree_id == "ses_9" for a in got)
    assert "orphaned" in got[0].summary and "600 s" in got[1].summary
    (bare,) = fleet_alerts([_daemon("down")], 600)
    assert bare.path == "/#/drivers?driver=d1" and bare.session_id is None


def test_a_dead_daemon_fires_then_resolves_when_it_beats_again(engine: Engine) -> None:
    import socket

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    with Session(engine) as db:
        beat = utcnow() - timedelta(hours=1)
        db.add(
            Daemon(
                driver="d1",
                host=socket.gethostname(),
                pid=dead.pid,
                last_heartbeat_at=beat,
                first_seen_at=beat,
            )
        )
        db.commit()
    sink = Sink()
    fleet = FleetAlerts(engine, sink, 600, 30)
    assert [(a.kind, a.state) for a in fleet.look()] == [("daemon_down", "firing")]
    with Session(engine) as db:
        row = db.exec(select(Daemon)).one()
        row.pid, row.last_heartbeat_at = os.getpid(), utcnow()  # it came back
        db.add(row)
        db.commit()
    assert [(a.kind, a.state) for a in fleet.look()] == [("daemon_down", "resolved")]
    assert fleet.look() == [] and len(sink.got) == 2
