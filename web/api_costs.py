"""`/api/costs`: the JSON twin of the Costs view (grouped in SQL by `telemetry.queries.costs`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from telemetry.queries.costs import GROUP_KEYS, cost_breakdown, most_expensive_sessions, most_expensive_trees
from telemetry.queries.fleet_models import CostsAnswer
from telemetry.timeutil import Since, utcnow
from web.deps import ReadDbDep
from web.errors import invalid_request

__all__ = ["DEFAULT_WINDOW", "router"]

DEFAULT_WINDOW = timedelta(days=7)
router = APIRouter(prefix="/api", tags=["costs"])


@router.get("/costs", response_model=CostsAnswer, response_model_exclude_unset=True)
def costs(
    db: ReadDbDep,
    since: Annotated[Since, Query(description="24h, 7d or an ISO time; default 7d")] = None,
    until: Annotated[Since, Query(description="24h, 7d or an ISO time; default now")] = None,
    by: Annotated[list[str] | None, Query(description="agent, model, driver, day; default all")] = None,
    top: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """Spend over a window grouped each way asked, totals, and the most expensive sessions and trees."""
    now = utcnow()
    start = since or now - DEFAULT_WINDOW
    end = until or now
    if end <= start:
        raise invalid_request("query.until", "the window ends before it starts")
    groups = [g for item in (by or list(GROUP_KEYS)) for g in item.split(",") if g]
    bad = [g for g in groups if g not in GROUP_KEYS]
    if bad:
        raise invalid_request("query.by", f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    breakdowns: dict[str, list[dict[str, Any]]] = {}
    totals: dict[str, Any] | None = None
    for key in dict.fromkeys(groups):
        result = cost_breakdown(db, [key], start, end)
        totals = totals or result["totals"]
        breakdowns[key] = [{"key": r[key], **r} for r in result["rows"]]
    if totals is None:
        totals = cost_breakdown(db, [], start, end)["totals"]
    return {
        "since": start.isoformat(),
        "until": end.isoformat(),
        "totals": totals,
        "breakdowns": breakdowns,
        "top_sessions": most_expensive_sessions(db, start, end, top),
        "top_trees": most_expensive_trees(db, start, end, top),
    }
