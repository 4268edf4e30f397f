"""Quota alerts while `octel watch` runs: every minute, each declared quota window's usage and
forecast (`telemetry.queries.quotas`), and an `Alert` once per window for a share reached, a
quota run out, and a forecast that runs out before the reset."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from telemetry.queries.quotas import RECENT_S, quota_windows
from telemetry.store.db import session_scope
from tower.alert import Alert, AlertSink
from tower.quotas import Quota, forecast, quota_crossings

__all__ = ["QuotaWatch"]

EVERY_S = 60.0  # a month's window changes slowly; its read spans the whole month


class QuotaWatch:
    def __init__(self, quotas: Sequence[Quota], sink: AlertSink, *, every: float = EVERY_S) -> None:
        self.quotas, self.sink, self.every = tuple(quotas), sink, every
        self.raised: set[str] = set()
        self._last = float("-inf")

    def check(self, engine: Engine, now: float) -> int:
        """Raise what is due if a check is due; how many alerts were raised."""
        if not self.quotas or now - self._last < self.every:
            return 0
        self._last = now
        at = datetime.fromtimestamp(now, UTC)
        with session_scope(engine, write=False) as db:
            got = quota_windows(db, self.quotas, at)
        n = 0
        for q, w in zip(self.quotas, got.quotas, strict=True):
            f = forecast(q, w.used, w.last_24h, RECENT_S, at)
            for level, key in quota_crossings(q, f, self.raised):
                self.raised.add(key)
                severity = "critical" if level == "exhausted" else "warning"
                used = f"{w.used_ratio:.0%} of {w.limit:,.0f} {q.unit} used"
                said = f"{q.provider} quota {q.name}: {used}; {w.forecast}"
                labels = {"provider": q.provider, "window": q.name, "level": level}
                self.sink.emit(Alert(key, "quota", severity, said, path="/", labels=labels))  # type: ignore[arg-type]
                n += 1
        return n
