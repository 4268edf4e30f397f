"""One delivery of an alert per firing, across processes: the claim in the store.

Each process's `tower.alert_dedup.Deduper` knows only what it sent itself: a watcher restarted
while an alert fires sends it again, and every watcher that raises the same fleet-day budget
alert sends its own. So before a delivery leaves, the process claims it in `alert_delivery`:
it reads the alert's last claimed row, decides as the `Deduper` does (due when the state
changed, or the same state was last claimed ``repeat_s`` ago or more; a resolve of an alert
never claimed is not due), and writes its first channel's row, outcome ``sending``, with the
claim key: a digest of the alert's key and that last row's id (0: none). The key is unique
(migration 0024), so of two processes that read the same last row only one writes the next;
the other sends nothing. The claims of one alert form a chain, one delivery per link.

The row then takes the delivery's outcome (`telemetry.alerting.record_deliveries`). A row a
process left ``sending`` (it died while delivering) counts as sent: the next reminder comes a
repeat interval later.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from archiver.redact import Redactor
from telemetry.store.alert_models import AlertDelivery
from telemetry.store.db import session_scope
from telemetry.timeutil import as_utc
from tower.alert import Alert
from tower.alert_payloads import console_link

__all__ = ["claim_alerts", "claim_key"]


def claim_key(alert_key: str, after: int) -> str:
    """The claim of the delivery that follows the claimed row ``after`` (0: the first)."""
    return hashlib.sha256(f"{alert_key}\n{after}".encode()).hexdigest()


def _due(last: AlertDelivery | None, state: str, now: float, repeat_s: float) -> bool:
    if last is None:
        return state == "firing"
    if last.state != state:
        return True
    return now - as_utc(last.sent_at).timestamp() >= repeat_s


def claim_alerts(
    engine: Engine,
    alerts: Sequence[Alert],
    now: float,
    *,
    channel: str,
    repeat_s: float,
    redactor: Redactor,
    console: str = "",
) -> dict[str, int]:
    """The alerts this process may deliver now, each with its claimed row's id (the row of
    ``channel``, outcome ``sending``); an alert left out was claimed by another process, or
    is not due by the store's record. Raises the store's errors (the caller decides)."""
    out: dict[str, int] = {}
    for a in alerts:
        key = redactor.cut(a.key, 300)
        with session_scope(engine, write=False) as db:
            q = select(AlertDelivery).where(
                col(AlertDelivery.alert_key) == key, col(AlertDelivery.claim_key).is_not(None)
            )
            last = db.exec(q.order_by(col(AlertDelivery.id).desc()).limit(1)).first()
            after = last.id or 0 if last is not None else 0
            due = _due(last, a.state, now, repeat_s)
        if not due:
            continue
        row = AlertDelivery(
            sent_at=datetime.fromtimestamp(now, UTC),
            alert_key=key,
            kind=a.kind[:40],
            severity=a.severity,
            state=a.state,
            channel=channel[:40],
            outcome="sending",
            attempts=0,
            summary=redactor.cut(a.summary, 1000, "…"),
            tree_id=a.tree_id[:200] if a.tree_id else None,  # ids, as the server gave them
            session_id=a.session_id[:200] if a.session_id else None,
            cycle_id=a.cycle_id[:200] if a.cycle_id else None,
            link=redactor.cut(console_link(console, a.path), 1000),
            claim_key=claim_key(key, after),
        )
        try:
            with session_scope(engine) as db:
                db.add(row)
                db.flush()
                out[a.key] = row.id or 0
        except IntegrityError:  # another process claimed this delivery first
            continue
    return out
