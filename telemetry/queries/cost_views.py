"""Every grouping the Costs page shows, from one scan of the window.

The page groups the window's spend by agent, model, driver and day, totals it and stacks it per
day: asked one by one, that is a scan of every session in the window per grouping. Here the
window is grouped once by all the keys together (a few thousand groups at most: agents by models
by drivers by days), and each grouping is folded from those groups in Python, with the costs
summed unrounded and rounded once, as SQL would.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlmodel import Session

from telemetry.queries.costs import grouped_records, merge_sources, present, stacked_days
from telemetry.queries.spend_read import fold

__all__ = ["CostViews", "cost_views", "fold"]

CostViews = tuple[dict[str, list[dict[str, Any]]], dict[str, Any], dict[str, Any]]


def cost_views(
    db: Session, groups: Sequence[str], stack: str, since: datetime | None, until: datetime | None
) -> CostViews:
    """(breakdowns by each of `groups`, merged across sources; totals; the daily series
    stacked by `stack`), from one grouped scan of the window. The driver lookup, the dearest
    part, runs only when `driver` is among `groups`."""
    if stack not in ("agent", "model"):
        raise ValueError(f"cannot stack by {stack!r}; choose agent or model")
    keys = ["agent", "model", "day", *(["driver"] if "driver" in groups else [])]
    records = grouped_records(db, keys, since, until)
    breakdowns = {}
    totals: dict[str, Any] | None = None
    for key in dict.fromkeys(groups):
        answer = present(fold(records, [key]), [key], since, until)
        totals = totals or answer["totals"]
        breakdowns[key] = merge_sources(answer["rows"], key)
    if totals is None:
        totals = present(fold(records, []), [], since, until)["totals"]
    daily = stacked_days(
        present(fold(records, ["day", stack]), ["day", stack], since, until)["rows"], stack, since, until
    )
    return breakdowns, totals, daily
