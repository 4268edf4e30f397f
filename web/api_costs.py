"""`/api/costs`: the JSON twin of the Costs view, the answer `octel costs --json` prints too
(`telemetry.queries.costs_answer`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from telemetry.queries.costs import COST_WINDOW
from telemetry.queries.costs_answer import costs_answer, groupings
from telemetry.queries.fleet_models import CostsAnswer
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
) -> CostsAnswer:
    """Spend over a window grouped each way asked (one row per key, its sources inside), totals,
    spend per day stacked by agent or model, and the most expensive sessions and trees (Claude
    CLI runs included), and apart from them the spend so far of sessions running now (`live`)."""
    now = utcnow()
    start = since or now - DEFAULT_WINDOW
    end = until or now
    if end <= start:
        raise invalid_request("query.until", "the window ends before it starts")
    try:
        keys = groupings(by)
    except ValueError as e:
        raise invalid_request("query.by", str(e)) from None
    return costs_answer(db, keys, start, until, top=top, stack=stack, now=now)
