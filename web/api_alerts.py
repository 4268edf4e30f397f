"""`GET /api/v1/alerts`: what alert delivery sent, the JSON twin of the console's "Alerts
sent" section and of `octel alerts list --json`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from telemetry.queries.alerts import MAX_ALERTS, AlertDeliveryPage, list_alert_deliveries
from telemetry.timeutil import Since
from web.deps import ReadDbDep

__all__ = ["router"]

router = APIRouter(prefix="/api/v1/alerts", tags=["alerts"])


@router.get("", response_model=AlertDeliveryPage)
def alerts(
    db: ReadDbDep,
    since: Since = None,
    key: Annotated[str | None, Query(max_length=300, description="Only this alert key.")] = None,
    session_id: Annotated[str | None, Query(description="Only this session (or the tree it roots).")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_ALERTS)] = 100,
) -> AlertDeliveryPage:
    """Alert deliveries (Alertmanager, webhooks), newest first: the alert, its state, the
    channel, how many tries it took and what the channel answered."""
    return list_alert_deliveries(db, since=since, key=key or None, session_id=session_id or None, limit=limit)
