"""Provider quotas: the window a quota counts, and when, at the recent rate, it runs out
(pure: no I/O, no clock).

A `Quota` is a provider's (or one key's) allowance of tokens or dollars over a window: monthly,
renewed at 00:00 UTC of ``reset_day``, or rolling over the last ``hours``. `forecast` takes what
the window used so far and what the last ``recent_s`` seconds used, and says when the allowance
runs out if that rate holds: for a monthly window, whether that lands before the reset; for a
rolling one, the window at that rate holds ``rate * hours``, so it runs out only if that passes
the limit. `quota_crossings` names the alerts due (a share reached, exhausted, a forecast that
lands before the reset), each once by key.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, get_args

from tower.budgets import UNITS, Unit

__all__ = [
    "WINDOWS",
    "Forecast",
    "Quota",
    "forecast",
    "provider_of",
    "quota_crossings",
    "quota_from_mapping",
    "window_of",
]

Window = Literal["monthly", "rolling"]
WINDOWS: tuple[Window, ...] = get_args(Window)
QuotaLevel = Literal["warning", "exhausted", "forecast"]


@dataclass(frozen=True)
class Quota:
    provider: str
    limit: float
    unit: Unit = "tokens"
    window: Window = "monthly"
    reset_day: int = 1  # monthly: the day of the month it renews (1 to 28)
    hours: float = 24.0  # rolling: the window's length
    key_label: str | None = None  # which key, when a provider has several
    drivers: tuple[str, ...] = ()  # only these drivers' spend counts (a key one fleet shares)
    warn_at: float = 0.8

    @property
    def name(self) -> str:
        """The window's label on `/metrics` and in the CLI: the key's label, else the window."""
        if self.key_label:
            return self.key_label
        return (
            f"monthly from day {self.reset_day}" if self.window == "monthly" else f"rolling {self.hours:g}h"
        )


def provider_of(model: str | None) -> str:
    """The provider of a model as the store names it: ``anthropic/claude-…`` or OpenCode's
    ``provider/model``; a bare Claude model name is Anthropic's."""
    m = (model or "").strip()
    if "/" in m:
        return m.split("/", 1)[0]
    return "anthropic" if m.startswith("claude") else ""


def _month_reset(year: int, month: int, day: int, tz: Any) -> datetime:
    return datetime(year, month, day, tzinfo=tz)


def window_of(q: Quota, now: datetime) -> tuple[datetime, datetime | None]:
    """(start, reset) of the window holding ``now``: a rolling window has no reset."""
    if q.window == "rolling":
        return now - timedelta(hours=q.hours), None
    this = _month_reset(now.year, now.month, q.reset_day, now.tzinfo)
    if this <= now:
        y, m = (now.year + 1, 1) if now.month == 12 else (now.year, now.month + 1)
        return this, _month_reset(y, m, q.reset_day, now.tzinfo)
    y, m = (now.year - 1, 12) if now.month == 1 else (now.year, now.month - 1)
    return _month_reset(y, m, q.reset_day, now.tzinfo), this


@dataclass(frozen=True)
class Forecast:
    used: float
    ratio: float  # used / limit
    rate_per_s: float  # the recent rate
    start: datetime
    reset: datetime | None
    exhausted_at: datetime | None  # when it runs out at that rate (now, if it has); None: never
    before_reset: bool  # it runs out before it renews (rolling: at all, at that rate)
    now: datetime

    @property
    def seconds_left(self) -> float | None:
        return None if self.exhausted_at is None else max((self.exhausted_at - self.now).total_seconds(), 0.0)

    def sentence(self, q: Quota, recent_s: float) -> str:
        """``at the last 24 h's rate this key runs out on Dec 19, 11 days before its reset``."""
        who = f"key {q.key_label}" if q.key_label else f"{q.provider}'s {q.window} quota"
        if self.ratio >= 1:
            return f"{who} has run out" + (f"; it resets on {self.reset:%b %d}" if self.reset else "")
        rate = f"at the last {recent_s / 3600:g} h's rate"
        if self.exhausted_at is None:
            return f"{rate} {who} does not run out" + (" before its reset" if self.reset else "")
        when = f"{self.exhausted_at:%b %d %H:%M} UTC"
        if self.reset is None:
            return f"{rate} {who} runs out on {when}"
        gap = self.reset - self.exhausted_at
        if gap.total_seconds() <= 0:
            return f"{rate} {who} lasts until its reset on {self.reset:%b %d}"
        ahead = f"{gap.days} days" if gap.days >= 1 else f"{gap.total_seconds() / 3600:.0f} h"
        return f"{rate} {who} runs out on {when}, {ahead} before its reset"


def forecast(q: Quota, used: float, recent: float, recent_s: float, now: datetime) -> Forecast:
    """When the quota runs out if the last ``recent_s`` seconds' use (``recent``) goes on."""
    start, reset = window_of(q, now)
    used, recent = max(used, 0.0), max(recent, 0.0)
    rate = recent / recent_s if recent_s > 0 else 0.0
    at: datetime | None
    if used >= q.limit:
        at = now
    elif rate <= 0 or (q.window == "rolling" and rate * q.hours * 3600 < q.limit):
        at = None  # never at this rate (a rolling window sheds old use as fast as it gains)
    else:
        at = now + timedelta(seconds=min((q.limit - used) / rate, 3.0e9))
    before = at is not None and (reset is None or at < reset)
    return Forecast(used, used / q.limit, rate, start, reset, at, before, now)


def quota_crossings(q: Quota, f: Forecast, done: Collection[str] = ()) -> list[tuple[QuotaLevel, str]]:
    """(level, key) of the alerts due now, each once per window (keys in ``done`` were raised)."""
    base = f"quota:{q.provider}:{q.name}:{q.limit:g}{q.unit}:{f.start:%Y-%m-%d}"
    if q.window == "rolling":
        base = f"quota:{q.provider}:{q.name}:{q.limit:g}{q.unit}"  # one condition: it clears itself
    due: list[QuotaLevel] = []
    if f.ratio >= 1:
        due.append("exhausted")
    elif f.ratio >= q.warn_at and q.warn_at < 1:
        due.append("warning")
    if f.before_reset and f.ratio < 1:
        due.append("forecast")
    return [(lv, k) for lv in due if (k := f"{base}:{lv}") not in done]


def _positive(raw: Any, name: str, where: str) -> float | None:
    v = raw.get(name)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or not v > 0:
        raise ValueError(f"{where}: {name} must be a number above 0, not {v!r}")
    return float(v)


_FIELDS = {
    "provider",
    "key_label",
    "window",
    "hours",
    "reset_day",
    "limit_tokens",
    "limit_usd",
    "drivers",
    "warn_at",
}


def quota_from_mapping(raw: Any, where: str = "quota") -> Quota:
    """One quota window of a budgets file; ValueError naming the field."""
    provider = raw.get("provider")
    if not isinstance(provider, str) or not provider.strip():
        raise ValueError(
            f"{where}: provider must be a provider name (as in provider/model), not {provider!r}"
        )
    window = raw.get("window", "monthly")
    if window not in WINDOWS:
        raise ValueError(f"{where}: window must be monthly or rolling, not {window!r}")
    usd, tokens = _positive(raw, "limit_usd", where), _positive(raw, "limit_tokens", where)
    if (usd is None) == (tokens is None):
        raise ValueError(f"{where}: give one of limit_usd or limit_tokens")
    day = raw.get("reset_day", 1)
    if isinstance(day, bool) or not isinstance(day, int) or not 1 <= day <= 28:
        raise ValueError(f"{where}: reset_day must be a day from 1 to 28, not {day!r}")
    hours = _positive(raw, "hours", where)
    if window == "rolling" and hours is None:
        raise ValueError(f"{where}: a rolling window needs hours")
    label = raw.get("key_label")
    if label is not None and (not isinstance(label, str) or not label.strip()):
        raise ValueError(f"{where}: key_label must be a name, not {label!r}")
    drivers = raw.get("drivers", [])
    if not isinstance(drivers, list) or not all(isinstance(d, str) and d for d in drivers):
        raise ValueError(f"{where}: drivers must be a list of driver names")
    warn = raw.get("warn_at", 0.8)
    if isinstance(warn, bool) or not isinstance(warn, int | float) or not 0 < warn <= 1:
        raise ValueError(f"{where}: warn_at must be a share above 0 and at most 1, not {warn!r}")
    unknown = sorted(set(raw) - _FIELDS)
    if unknown:
        raise ValueError(f"{where}: unknown field {unknown[0]!r}")
    limit, unit = (usd, "usd") if usd is not None else (tokens, "tokens")
    assert limit is not None and unit in UNITS
    return Quota(
        provider.strip(),
        limit,
        unit,
        window,
        day,
        hours or 24.0,
        label.strip() if label else None,
        tuple(drivers),
        float(warn),
    )
