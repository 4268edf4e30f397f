"""What `/api/health` shows of the fleet: every daemon, but only the newest few of the open
cycles no heartbeat ever named (pure).

A fleet keeps every cycle a dead dispatcher left open, and health listed each as a row: 2,020 open
cycles made an 830 kB answer that the Overview polled. Daemons are as many as the fleet runs;
cycles that never beat grow with history. So the answer keeps each daemon, the newest
`PER_DRIVER` cycle-only rows of each driver, and counts the rest per driver with a link to the
cycles list; the fleet's counts and status still cover every row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote

__all__ = ["PER_DRIVER", "bounded_daemons"]

PER_DRIVER = 3


def bounded_daemons(
    rows: Sequence[Mapping[str, Any]], per_driver: int = PER_DRIVER
) -> tuple[list[Mapping[str, Any]], list[dict[str, Any]]]:
    """(rows shown, one summary per driver with cycle-only rows left out).

    A row whose `source` is `cycle` is a driver known only from an open cycle; of those, the
    newest `per_driver` per driver are kept (by the cycle's start). The order of `rows` is kept.
    """
    by_driver: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        if r["source"] == "cycle":
            by_driver.setdefault(r["driver"], []).append(i)
    dropped: set[int] = set()
    more: list[dict[str, Any]] = []
    for driver, idx in sorted(by_driver.items()):
        if len(idx) <= per_driver:
            continue
        newest_first = sorted(idx, key=lambda i: _started(rows[i]), reverse=True)
        left = newest_first[per_driver:]
        dropped.update(left)
        orphaned = sum(1 for i in left if rows[i]["state"] == "down")
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


def _started(row: Mapping[str, Any]) -> str:
    flight = row.get("in_flight_cycle") or {}
    return str(flight.get("started_at") or "")
