"""`/api/costs`: the JSON twin of the Costs view (grouped in SQL by `telemetry.queries.costs`,
every grouping from one scan of the window by `telemetry.queries.cost_views`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from telemetry.queries.cost_views import cost_views
from telemetry.queries.costs import COST_WINDOW, GROUP_KEYS, most_expensive_sessions, most_expensive_trees
from telemetry.queries.fleet_models import CostsAnswer
from telemetry.queries.live_spend import live_spend
from telemetry.timeutil import Since, utcnow
from web.deps import ReadDbDep
from web.errors import invalid_request

__all__ = ["DEFAULT_WINDOW", "router"]

DEFAULT_WINDOW = timedelta(days=int(COST_WINDOW.removesuffix("d")))
router = APIRouter(prefix="/api", tags=["costs"])


@router.get("/costs", response_model=CostsAnswer, response_model_exclude_unset=True)
def costs(
    db: ReadDbDep,
    since: Annotated[Since, Query(description="24h, 7d or an ISO time; default 7d")] = None,
    until: Annotated[Since, Query(description="24h, 7d or an ISO time; default now")] = None,
    by: Annotated[list[str] | None, Query(description="agent, model, driver, day; default all")] = None,
    top: Annotated[int, Query(ge=1, le=100)] = 10,
    stack: Annotated[str, Query(pattern="^(agent|model)$", description="the chart's stacks")] = "agent",
) -> dict[str, Any]:
    """Spend over a window grouped each way asked (one row per key, its sources inside), totals,
    spend per day stacked by agent or model, and the most expensive sessions and trees (Claude
    CLI runs included), and apart from them the spend so far of sessions running now (`live`)."""
    now = utcnow()
    start = since or now - DEFAULT_WINDOW
    end = until or now
    if end <= start:
        raise invalid_request("query.until", "the window ends before it starts")
    groups = [g.strip() for item in (by or list(GROUP_KEYS)) for g in item.split(",")]  # "" is no group
    bad = [g for g in groups if g not in GROUP_KEYS]
    if bad:
        raise invalid_request("query.by", f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    breakdowns, totals, daily = cost_views(db, groups, stack, start, end)
    return {
        "since": start.isoformat(),
        "until": end.isoformat(),
        "totals": totals,
        "breakdowns": breakdowns,
        "daily": daily,
        "top_sessions": most_expensive_sessions(db, start, end, top),
        "top_trees": most_expensive_trees(db, start, end, top),
        # what runs now is spent now: shown with a window that reaches the present only
        **({"live": live_spend(db, top)} if until is None or end >= now else {}),
    }
