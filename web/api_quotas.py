"""`GET /api/quotas`: each declared quota window, its usage and burn-rate forecast, the JSON twin
of `octel quotas --json` and of the console's Overview tile."""

from __future__ import annotations

from fastapi import APIRouter, Request

from telemetry.queries.quotas import QuotasOut, quota_windows
from telemetry.timeutil import utcnow
from web.app_state import app_state
from web.deps import ReadDbDep

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["costs"])


@router.get("/quotas", response_model=QuotasOut)
def quotas(db: ReadDbDep, request: Request) -> QuotasOut:
    """Every quota window of `OCTEL_BUDGETS_FILE` (none without one), in the order declared:
    used, limit, when it renews and when it runs out at the last 24 hours' rate."""
    return quota_windows(db, app_state(request.app).quotas, utcnow())
