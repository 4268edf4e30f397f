"""The fleet's word on open cycles, decided once for the API, the console and the CLI.

A cycle's row says only whether it ended. Whether an open cycle will still finish is the
fleet's rule (`telemetry.queries.health`): its daemon down makes it orphaned, a stale heartbeat
with the process alive makes it a long-running worker. `cycles_page` and `summary_answer` apply
that rule to the cycle list and the per-driver summary; `cycle_fleet` is the rule for one cycle
(what `octel why CYCLE` says).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlmodel import Session

from telemetry.queries.cycles import CycleFilter, cycles_summary, list_cycles
from telemetry.queries.fleet_models import CyclePage, CyclesSummary, DaemonState
from telemetry.queries.health import Liveness, fleet_rows, local_liveness

__all__ = ["CycleFleet", "cycle_fleet", "cycles_page", "open_cycle_fleet", "summary_answer"]

LivenessOf = Callable[[str, int | None], Liveness]


@dataclass(frozen=True, slots=True)
class CycleFleet:
    """What the fleet knows of one open cycle: its daemon's state, why, and its process."""

    cycle_id: str
    driver: str
    started_at: str | None
    daemon_state: DaemonState
    reason: str
    liveness: Liveness

    @property
    def orphaned(self) -> bool:
        """Its daemon is down: the cycle stays open in the table but will never finish."""
        return self.daemon_state == "down"

    @property
    def long_running(self) -> bool:
        return self.daemon_state == "running_long_worker"


def open_cycle_fleet(
    db: Session, now: datetime, threshold_s: float, liveness: LivenessOf = local_liveness
) -> dict[str, CycleFleet]:
    """Every open cycle the fleet health knows, by cycle id."""
    out: dict[str, CycleFleet] = {}
    for d in fleet_rows(db, now, threshold_s, liveness).rows:
        c = d.in_flight_cycle
        if c and c.cycle_id:
            out[c.cycle_id] = CycleFleet(c.cycle_id, d.driver, c.started_at, d.state, d.reason, d.liveness)
    return out


def cycle_fleet(
    db: Session, cycle_id: str, now: datetime, threshold_s: float, liveness: LivenessOf = local_liveness
) -> CycleFleet | None:
    """The fleet's word on one open cycle; None when it ended or no daemon or pid speaks for it."""
    return open_cycle_fleet(db, now, threshold_s, liveness).get(cycle_id)


def cycles_page(
    db: Session, f: CycleFilter, now: datetime, threshold_s: float, liveness: LivenessOf = local_liveness
) -> CyclePage:
    """`list_cycles` with each open cycle's daemon state, orphaned and long-running marked."""
    page = list_cycles(db, f, now)
    live = any(c.in_flight for c in page.items)
    fleet = open_cycle_fleet(db, now, threshold_s, liveness) if live else {}
    for c in page.items:  # every field set, so every output (JSON, CSV) has every column
        got = fleet.get(c.cycle_id) if c.in_flight else None
        c.daemon_state, c.daemon_reason = (got.daemon_state, got.reason) if got else (None, None)
        c.orphaned, c.long_running = (got.orphaned, got.long_running) if got else (False, False)
    return page


def summary_answer(
    db: Session,
    since: datetime,
    now: datetime,
    threshold_s: float,
    hours: float | None = None,
    liveness: LivenessOf = local_liveness,
) -> CyclesSummary:
    """Per driver: cycles by state; `in_flight` counts the open cycles that may still finish,
    `orphaned` those of a daemon that is down, `long_running` those of a long-running worker."""
    fields = {"since": since.isoformat(), "drivers": cycles_summary(db, since)}
    answer = CyclesSummary.model_validate(fields | ({"window_hours": hours} if hours else {}))
    for d in answer.drivers:
        d.orphaned, d.long_running = 0, 0
    if not any(d.in_flight for d in answer.drivers):
        return answer
    orphans: dict[str, int] = {}
    long: dict[str, int] = {}
    for c in open_cycle_fleet(db, now, threshold_s, liveness).values():
        if c.started_at and c.started_at >= since.isoformat():
            for counts, yes in ((orphans, c.orphaned), (long, c.long_running)):
                if yes:
                    counts[c.driver] = counts.get(c.driver, 0) + 1
    for d in answer.drivers:
        d.orphaned = min(orphans.get(d.driver, 0), d.in_flight)
        d.in_flight -= d.orphaned
        d.long_running = min(long.get(d.driver, 0), d.in_flight)
    return answer
