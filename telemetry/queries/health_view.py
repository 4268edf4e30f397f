"""The fleet's health as `/api/health` and the CLI say it: the worst state, counts, and the rows.

A fleet keeps every cycle a dead dispatcher left open, and health listed each as a row: 2,020 open
cycles made an 830 kB answer that the Overview polled. Daemons are as many as the fleet runs;
cycles that never beat grow with history. So the answer can keep each daemon and only the newest
`PER_DRIVER` cycle-only rows of each driver, counting the rest per driver with a link to the
cycles list (`bounded`, pure); the status and counts still cover every row. `/api/health` has
the store count and pick them instead (`health_bounded`), so its cost does not grow with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

from sqlmodel import Session

from telemetry.queries.health import STATES, DaemonHealth, Liveness, State, fleet_rows, local_liveness
from telemetry.queries.health_bounded import bounded_fleet

__all__ = ["PER_DRIVER", "bounded", "fleet_health"]

PER_DRIVER = 3


def fleet_health(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
    per_driver: int | None = None,
) -> dict[str, Any]:
    """Every daemon, plus the open cycles no daemon claims; the worst state and counts.

    `status` is the worst state present (ok when nothing is known); `cycles_in_flight` counts
    open cycles whose daemon is not down, `cycles_orphaned` those whose daemon is down. With
    `per_driver`, cycle-only rows are bounded (`bounded`) and `more_open_cycles` counts the rest.
    """
    if per_driver is not None:
        some = bounded_fleet(db, now, threshold_s, liveness, per_driver)
        answer = _answer(
            {s: some.states.get(s, 0) for s in STATES}, some.cycles_in_flight, some.cycles_orphaned
        )
        answer["more_open_cycles"] = some.more_open_cycles
        answer["daemons"] = [d.to_dict() for d in some.rows]
        return answer
    fleet = fleet_rows(db, now, threshold_s, liveness)
    counts = {s: sum(1 for d in fleet.rows if d.state == s) for s in STATES}
    answer = _answer(dict(counts), fleet.cycles_in_flight, fleet.cycles_orphaned)
    answer["daemons"] = [d.to_dict() for d in fleet.rows]
    return answer


def _answer(counts: dict[State, int], in_flight: int, orphaned: int) -> dict[str, Any]:
    worst = max((STATES.index(s) for s, n in counts.items() if n), default=0)
    return {
        "status": STATES[worst],
        "counts": counts,
        "cycles_in_flight": in_flight,
        "cycles_orphaned": orphaned,
    }


def bounded(rows: Sequence[DaemonHealth], per_driver: int) -> tuple[list[DaemonHealth], list[dict[str, Any]]]:
    """(rows shown, one summary per driver with cycle-only rows left out).

    A row whose `source` is `cycle` is a driver known only from an open cycle; of those, the
    newest `per_driver` per driver are kept (by the cycle's start). The order of `rows` is kept.
    """
    by_driver: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r.source == "cycle":
            by_driver.setdefault(r.driver, []).append(i)
    dropped: set[int] = set()
    more: list[dict[str, Any]] = []
    for driver, idx in sorted(by_driver.items()):
        if len(idx) <= per_driver:
            continue
        newest_first = sorted(idx, key=lambda i: _started(rows[i]), reverse=True)
        left = newest_first[per_driver:]
        dropped.update(left)
        orphaned = sum(1 for i in left if rows[i].state == "down")
        more.append(
            {
                "driver": driver,
                "cycles": len(left),
                "orphaned": orphaned,
                "in_flight": len(left) - orphaned,
                "cycles_url": f"/api/cycles?driver={quote(driver, safe='')}&in_flight=true",
            }
        )
    return [r for i, r in enumerate(rows) if i not in dropped], more


def _started(row: DaemonHealth) -> str:
    return str((row.in_flight_cycle or {}).get("started_at") or "")
