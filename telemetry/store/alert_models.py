"""Every delivery of an alert: which alert, to which channel, when, and what the channel said.

One row per alert per channel per delivery (a repeat or a resolve is a row of its own), written
by `telemetry.alerting` after the last try, with the number of tries it took. The first
channel's row of a delivery is written before it (outcome ``sending``) with a unique
`claim_key`: the claim that makes it this process's to send (`telemetry.alert_claim`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from telemetry.store.columns import timestamp

__all__ = ["AlertDelivery"]


class AlertDelivery(SQLModel, table=True):
    __tablename__ = "alert_delivery"
    __table_args__ = (
        Index("ix_alert_delivery_sent_at", "sent_at", "id"),
        Index("ix_alert_delivery_key", "alert_key", "sent_at"),
        Index("ux_alert_delivery_claim", "claim_key", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    sent_at: datetime = timestamp()
    alert_key: str = Field(max_length=300)
    kind: str = Field(max_length=40)
    severity: str = Field(max_length=20)
    state: str = Field(max_length=20)  # firing, resolved
    channel: str = Field(max_length=40)  # alertmanager, webhook_json, webhook_slack
    outcome: str = Field(max_length=20)  # sent, failed; sending while a claimed delivery is out
    status_code: int | None = None
    answer: str | None = Field(default=None, max_length=500)
    attempts: int = 1
    summary: str = Field(max_length=1000)
    tree_id: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=200)
    cycle_id: str | None = Field(default=None, max_length=200)
    link: str = Field(max_length=1000)
    claim_key: str | None = Field(default=None, max_length=64)  # None: not a claim (or before 0024)
