"""What `/api/health` keeps of the whole fleet, said the plain way: every row built, then all but
each driver's newest few cycle-only rows dropped and counted. The store's bounded answer
(`telemetry.queries.health_bounded`) is held equal to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from telemetry.queries.health import DaemonHealth


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
    return str(row.in_flight_cycle.started_at or "") if row.in_flight_cycle else ""
