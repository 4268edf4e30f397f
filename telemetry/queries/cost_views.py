"""Every grouping the Costs page shows, from one statement over the window.

The page groups the window's spend by agent, model, driver and day, totals it and stacks it per
day. The window (the summary's whole days, the index rows of its partial days, the runs) is
read once and grouped each way in the database (`spend_read.window_groupings`): a few dozen
rows come back instead of every (day, agent, model, driver) group, which Python would fold six
times. Costs are summed unrounded and rounded once.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlmodel import Session

from telemetry.queries.costs import GROUP_KEYS, merge_sources, present, stacked_days
from telemetry.queries.fleet_models import CostRow, CostTotals, DailySeries
from telemetry.queries.spend_read import window_groupings

__all__ = ["CostViews", "cost_views"]

CostViews = tuple[dict[str, list[CostRow]], CostTotals, DailySeries]


def cost_views(
    db: Session, groups: Sequence[str], stack: str, since: datetime | None, until: datetime | None
) -> CostViews:
    """(breakdowns by each of `groups`, merged across sources; totals; the daily series
    stacked by `stack`), from one statement over the window."""
    if stack not in ("agent", "model"):
        raise ValueError(f"cannot stack by {stack!r}; choose agent or model")
    keys = list(dict.fromkeys(groups))
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    # the totals of the first grouping, as `cost_breakdown` of it gives them (sums of its
    # rounded rows); of the whole window when there is none
    sets: list[list[str]] = [*([k] for k in keys), *([] if keys else [[]]), ["day", stack]]
    *by_key, daily_rows = window_groupings(db, since, until, sets)
    answers = [present(rows, ks, since, until) for rows, ks in zip(by_key, sets, strict=False)]
    breakdowns = {k: merge_sources(a.rows, k) for k, a in zip(keys, answers, strict=False)}
    totals = answers[0].totals
    daily = stacked_days(present(daily_rows, ["day", stack], since, until).rows, stack, since, until)
    return breakdowns, totals, daily
