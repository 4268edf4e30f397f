"""Alert delivery wired to the settings and the store.

`start_alerts` builds the channels the settings name (Alertmanager, a JSON or Slack webhook),
starts the `tower.alert_delivery.Deliverer` thread and returns the running `Alerts`: its
``sink`` is what producers emit to (a `NullSink` when no channel is set, so producers never
ask). Every delivery is written as an `alert_delivery` row, through the redactor (the summary
and the channel's answer may quote a prompt or a command), and counted in
``octel_alert_deliveries_total``; drops of a full queue in ``octel_alert_deliveries_dropped_total``.
Each delivery is claimed in the store first (`telemetry.alert_claim`): the first channel's row,
written ``sending`` before the request, takes the outcome after; a delivery another process
claimed is not sent here.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlmodel import Session

from archiver.cut import cut
from archiver.redact import Redactor
from telemetry.alert_claim import claim_alerts
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.alert_models import AlertDelivery
from telemetry.store.db import session_scope
from tower.alert import Alert, AlertSink, NullSink
from tower.alert_delivery import AlertmanagerChannel, Channel, Deliverer, Delivery, QueueSink, WebhookChannel
from tower.alert_payloads import console_link

__all__ = ["Alerts", "channels_of", "record_deliveries", "start_alerts"]

log = logging.getLogger(__name__)


def channels_of(settings: Settings) -> list[Channel]:
    """The channels the settings configure, in a fixed order."""
    out: list[Channel] = []
    base = settings.console_url
    if settings.alertmanager_url:
        out.append(AlertmanagerChannel(settings.alertmanager_url, base, settings.alert_repeat_seconds))
    if settings.alert_webhook_url:
        secret = (
            settings.alert_webhook_secret.get_secret_value().encode()
            if settings.alert_webhook_secret
            else b""
        )
        fmt = settings.alert_webhook_format
        out.append(WebhookChannel(settings.alert_webhook_url, base, fmt=fmt, secret=secret))
    return out


def record_deliveries(
    db: Session, deliveries: list[Delivery], dropped: int, *, redactor: Redactor, console: str = ""
) -> list[AlertDelivery]:
    """One row per delivery, redacted and cut to its columns, counted with it (a claimed
    delivery's row, written before it, takes its outcome)."""
    rows = []
    for d in deliveries:
        a = d.alert
        claimed = db.get(AlertDelivery, d.claim_id) if d.claim_id else None
        if claimed is not None:
            claimed.sent_at = datetime.fromtimestamp(d.sent_at, UTC)
            claimed.outcome, claimed.status_code, claimed.attempts = d.outcome, d.status, d.attempts
            claimed.answer = redactor.cut(d.answer, 500, "…") or None
            db.add(claimed)
            bump(db, "alert_deliveries_total", {"channel": claimed.channel, "outcome": d.outcome}, 1)
            rows.append(claimed)
            continue
        row = AlertDelivery(
            sent_at=datetime.fromtimestamp(d.sent_at, UTC),
            alert_key=redactor.cut(a.key, 300),
            kind=a.kind[:40],
            severity=a.severity,
            state=a.state,
            channel=d.channel[:40],
            outcome=d.outcome,
            status_code=d.status,
            answer=redactor.cut(d.answer, 500, "…") or None,
            attempts=d.attempts,
            summary=redactor.cut(a.summary, 1000, "…"),
            tree_id=a.tree_id[:200] if a.tree_id else None,  # ids, as the server gave them
            session_id=a.session_id[:200] if a.session_id else None,
            cycle_id=a.cycle_id[:200] if a.cycle_id else None,
            link=redactor.cut(console_link(console, a.path), 1000),
        )
        db.add(row)
        bump(db, "alert_deliveries_total", {"channel": row.channel, "outcome": d.outcome}, 1)
        rows.append(row)
    if dropped:
        bump(db, "alert_deliveries_dropped_total", {}, dropped)
    return rows


@dataclass
class Alerts:
    """Delivery while it runs; `close` sends what is queued, then stops."""

    sink: AlertSink
    deliverer: Deliverer | None = None
    channels: list[str] = field(default_factory=list)

    def close(self, timeout: float = 10.0) -> None:
        if self.deliverer is not None:
            self.deliverer.close(timeout)

    def describe(self) -> str:
        return ", ".join(self.channels) or "none"


def start_alerts(
    settings: Settings, engine: Engine, redactor: Redactor, *, group_wait_s: float = 0.2
) -> Alerts:
    """Start delivering to the configured channels (none: a `NullSink`, no thread)."""
    chans = channels_of(settings)
    if not chans:
        return Alerts(NullSink())

    def record(done: list[Delivery], dropped: int) -> None:
        with session_scope(engine) as db:
            record_deliveries(db, done, dropped, redactor=redactor, console=settings.console_url)
        for d in done:
            if d.outcome == "failed":
                log.warning(
                    "octel: alert %s not delivered to %s after %d tries: %s %s",
                    redactor.redact_str(d.alert.key),
                    d.channel,
                    d.attempts,
                    d.status,
                    cut(redactor.redact_str(d.answer), 200, "…"),
                )

    def claim(alerts: Sequence[Alert], now: float) -> dict[str, int]:
        return claim_alerts(
            engine,
            alerts,
            now,
            channel=chans[0].name,
            repeat_s=settings.alert_repeat_seconds,
            redactor=redactor,
            console=settings.console_url,
        )

    sink = QueueSink(settings.alert_queue_size)
    deliverer = Deliverer(
        sink,
        chans,
        record,
        repeat_s=settings.alert_repeat_seconds,
        group_wait_s=group_wait_s,
        retries=settings.alert_retries,
        claim=claim,
    ).start()
    return Alerts(sink, deliverer, [c.name for c in chans])
