"""The Costs answer, made once: what `GET /api/costs` serves and `octel costs --json` prints.

Every grouping asked for (one row per key, its sources inside), the totals and the daily series
come from one statement over the window (`cost_views`); then the most expensive sessions and
trees, Claude CLI runs ranked among them; and, when the window reaches now, the spend so far of
the sessions running now (`live`, apart from the totals: no archive holds it yet).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlmodel import Session

from telemetry.queries.cost_views import cost_views
from telemetry.queries.costs import GROUP_KEYS, most_expensive_sessions, most_expensive_trees
from telemetry.queries.fleet_models import CostsAnswer
from telemetry.queries.live_spend import live_spend
from telemetry.timeutil import as_utc, utcnow

__all__ = ["costs_answer", "groupings"]


def groupings(items: Iterable[str] | None) -> list[str]:
    """The groupings asked for: items given once or comma-separated, blanks dropped, each once,
    all four when none is given (None). ValueError names the first that is not a group key."""
    if items is None:
        return list(GROUP_KEYS)
    keys = list(dict.fromkeys(k.strip() for item in items for k in item.split(",") if k.strip()))
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    return keys


def costs_answer(
    db: Session,
    by: Iterable[str],
    since: datetime | None,
    until: datetime | None = None,
    *,
    top: int = 10,
    stack: str = "agent",
    now: datetime | None = None,
) -> CostsAnswer:
    """Spend from `since` (None: from the first) to `until` (None: now) grouped by each of `by`
    (group keys), the `top` most expensive sessions and trees (none for 0), the daily series
    stacked by `stack` (agent or model), and `live` when the window reaches now."""
    now = now or utcnow()
    start, end = since, until or now
    if start is not None and as_utc(end) <= as_utc(start):
        raise ValueError("the window ends before it starts")
    breakdowns, totals, daily = cost_views(db, groupings(by), stack, start, end)
    answer = CostsAnswer(
        since=start.isoformat() if start else None,
        until=end.isoformat(),
        totals=totals,
        breakdowns=breakdowns,
        daily=daily,
        top_sessions=most_expensive_sessions(db, start, end, top) if top > 0 else [],
        top_trees=most_expensive_trees(db, start, end, top) if top > 0 else [],
    )
    if as_utc(end) >= now:  # what runs now is spent now: shown with a window that reaches the present only
        answer.live = live_spend(db, top)  # set, so present in the answer's JSON
    return answer
