"""Read what alert delivery sent: newest first. One typed model serves `GET /api/v1/alerts`,
the console's "Alerts sent" section and `octel alerts list --json`."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlmodel import Session, col, select

from telemetry.store.alert_models import AlertDelivery
from telemetry.timeutil import as_utc

__all__ = ["MAX_ALERTS", "AlertDeliveryOut", "AlertDeliveryPage", "list_alert_deliveries"]

MAX_ALERTS = 1000


class AlertDeliveryOut(BaseModel):
    id: int
    sent_at: datetime
    alert_key: str
    kind: str
    severity: str
    state: str
    channel: str
    outcome: str
    status_code: int | None
    answer: str | None
    attempts: int
    summary: str
    tree_id: str | None
    session_id: str | None
    cycle_id: str | None
    link: str


class AlertDeliveryPage(BaseModel):
    items: list[AlertDeliveryOut]


def list_alert_deliveries(
    db: Session,
    *,
    since: datetime | None = None,
    key: str | None = None,
    session_id: str | None = None,
    limit: int = 100,
) -> AlertDeliveryPage:
    """Deliveries newest first; ``session_id`` matches the session or the tree it roots."""
    q = select(AlertDelivery)
    if since is not None:
        q = q.where(col(AlertDelivery.sent_at) >= since)
    if key:
        q = q.where(col(AlertDelivery.alert_key) == key)
    if session_id:
        q = q.where(
            (col(AlertDelivery.session_id) == session_id) | (col(AlertDelivery.tree_id) == session_id)
        )
    q = q.order_by(col(AlertDelivery.sent_at).desc(), col(AlertDelivery.id).desc())
    q = q.limit(max(1, min(limit, MAX_ALERTS)))
    items = [
        AlertDeliveryOut(
            **{k: getattr(r, k) for k in AlertDeliveryOut.model_fields if k not in ("id", "sent_at")},
            id=r.id or 0,
            sent_at=as_utc(r.sent_at),
        )
        for r in db.exec(q)
    ]
    return AlertDeliveryPage(items=items)
