"""Each declared quota window: what its provider (or key) used so far, and when it runs out
at the last 24 hours' rate (`tower.quotas.forecast`). One model serves `octel quotas --json`,
the console's Overview tile (`GET /api/quotas`) and `/metrics`.

Usage is the Costs page's read (`spend_read.window_groupings` by model and driver: archived
sessions and the Claude runs no archive holds) plus what live sessions spent past their archive
(`live_spend.live_past_archive`), attributed to a provider by the model's name
(`tower.quotas.provider_of`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pydantic import BaseModel, Field
from sqlmodel import Session

from telemetry.queries.live_spend import LiveUse, live_past_archive
from telemetry.queries.spend_read import window_groupings
from telemetry.queries.spend_record import SpendRecord
from telemetry.timeutil import as_utc
from tower.quotas import Quota, forecast, provider_of

__all__ = ["RECENT_S", "QuotaOut", "QuotasOut", "quota_windows"]

RECENT_S = 24 * 3600.0  # the rate of the forecast: the last day's use


class QuotaOut(BaseModel):
    provider: str
    window: str = Field(description="the key's label, else the window (`monthly from day 1`, `rolling 5h`)")
    kind: str = Field(description="monthly or rolling")
    unit: str = Field(description="tokens or usd")
    limit: float
    used: float
    used_ratio: float
    last_24h: float = Field(description="used in the last 24 hours: the forecast's rate")
    start: datetime
    reset_at: datetime | None = Field(description="when a monthly window renews; none for a rolling one")
    exhausted_at: datetime | None = Field(description="when it runs out at the last 24 h's rate; none: never")
    exhausted_forecast_seconds: float | None
    runs_out_before_reset: bool
    forecast: str = Field(description="the forecast in one sentence")


class QuotasOut(BaseModel):
    at: datetime
    quotas: list[QuotaOut]


def _amount(q: Quota, rec: SpendRecord) -> float:
    if q.unit == "usd":
        return rec.cost_usd
    return float(sum(rec.tokens().values()))


def _counts(q: Quota, model: str | None, driver: str | None) -> bool:
    return provider_of(model) == q.provider and (not q.drivers or driver in q.drivers)


def _used(q: Quota, records: Sequence[SpendRecord], live: Sequence[LiveUse]) -> float:
    total = 0.0
    for r in records:
        if _counts(q, r.model, r.driver):
            total += _amount(q, r)
    for u in live:
        if _counts(q, u.row.model, u.row.driver):
            total += u.cost_usd if q.unit == "usd" else u.tokens
    return total


def quota_windows(db: Session, quotas: Sequence[Quota], now: datetime) -> QuotasOut:
    """Every quota window with its usage and forecast, in the order declared."""
    now = as_utc(now)
    out = []
    live = live_past_archive(db) if quotas else []
    day_ago = now - timedelta(seconds=RECENT_S)
    cache: dict[datetime, list[SpendRecord]] = {}

    def records(since: datetime) -> list[SpendRecord]:
        if since not in cache:
            (cache[since],) = window_groupings(db, since, now, [["model", "driver"]])
        return cache[since]

    for q in quotas:
        f = forecast(q, 0.0, 0.0, RECENT_S, now)
        used = _used(q, records(f.start), live)
        recent = _used(q, records(day_ago), live)
        f = forecast(q, used, recent, RECENT_S, now)
        out.append(
            QuotaOut(
                provider=q.provider,
                window=q.name,
                kind=q.window,
                unit=q.unit,
                limit=q.limit,
                used=round(used, 6),
                used_ratio=round(f.ratio, 6),
                last_24h=round(recent, 6),
                start=f.start,
                reset_at=f.reset,
                exhausted_at=f.exhausted_at,
                exhausted_forecast_seconds=f.seconds_left,
                runs_out_before_reset=f.before_reset,
                forecast=f.sentence(q, RECENT_S),
            )
        )
    return QuotasOut(at=now, quotas=out)
