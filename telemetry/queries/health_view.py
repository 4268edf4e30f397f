"""The fleet's health as `/api/health` and the CLI say it: the worst state, counts, and the rows.

A fleet keeps every cycle a dead dispatcher left open, and health listed each as a row: 2,020 open
cycles made an 830 kB answer that the Overview polled. Daemons are as many as the fleet runs;
cycles that never beat grow with history. So `/api/health` keeps each daemon and only the newest
`PER_DRIVER` cycle-only rows of each driver, counting the rest per driver with a link to the
cycles list; the status and counts still cover every row. The store counts and picks them
(`health_bounded`), so its cost does not grow with them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from sqlmodel import Session

from telemetry.queries.fleet_models import Health
from telemetry.queries.health import STATES, Liveness, fleet_rows, local_liveness
from telemetry.queries.health_bounded import bounded_fleet

__all__ = ["PER_DRIVER", "fleet_health"]

PER_DRIVER = 3


def fleet_health(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
    per_driver: int | None = None,
) -> Health:
    """Every daemon, plus the open cycles no daemon claims; the worst state and counts.

    `status` is the worst state present (ok when nothing is known); `cycles_in_flight` counts
    open cycles whose daemon is not down, `cycles_orphaned` those whose daemon is down. With
    `per_driver`, only each driver's newest cycle-only rows are kept and `more_open_cycles` counts
    the rest (none left out without it). `threshold_s` is the long-worker heartbeat age.
    """
    if per_driver is not None:
        some = bounded_fleet(db, now, threshold_s, liveness, per_driver)
        counts = {s: some.states.get(s, 0) for s in STATES}
        rows, in_flight, orphaned, more = (
            some.rows,
            some.cycles_in_flight,
            some.cycles_orphaned,
            some.more_open_cycles,
        )
    else:
        fleet = fleet_rows(db, now, threshold_s, liveness)
        counts = {s: sum(1 for d in fleet.rows if d.state == s) for s in STATES}
        rows, in_flight, orphaned, more = fleet.rows, fleet.cycles_in_flight, fleet.cycles_orphaned, []
    worst = max((STATES.index(s) for s, n in counts.items() if n), default=0)
    return Health(
        status=STATES[worst],
        now=now.isoformat(),
        long_worker_seconds=threshold_s,
        counts=dict(counts),
        cycles_in_flight=in_flight,
        cycles_orphaned=orphaned,
        daemons=[d.record() for d in rows],
        more_open_cycles=more,
    )
