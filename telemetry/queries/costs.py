"""Cost rollups over OpenCode sessions and Claude CLI runs together.

A session counts at its creation time (its archive time when the server did not say); a Claude
run at the time it was recorded. A session's driver is the driver of its cycle, the same link
`linked_cycle` follows: the archive's `cycle_id` (or a label that is a cycle id), else a cycle
posted with the session's (or its root's) id. A label is never taken for a driver; Claude runs
carry no driver. Sessions are read through the daily summary (`spend_read.window_groupings`).
Tokens follow DESIGN.md: input excludes cache reads and writes, so the cache-hit ratio is
cache_read / (input + cache_read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlmodel import Session

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.fleet_models import CostRow, CostTotals, DailySeries
from telemetry.queries.session_models import Tokens
from telemetry.queries.spend_read import window_groupings
from telemetry.queries.spend_record import SpendRecord
from telemetry.queries.top_spend import most_expensive_sessions, most_expensive_trees, session_window
from telemetry.timeutil import as_utc

__all__ = [
    "COST_WINDOW",
    "GROUP_KEYS",
    "TOKEN_KINDS",
    "CostBreakdown",
    "cost_breakdown",
    "daily_series",
    "grouped_records",
    "merge_sources",
    "most_expensive_sessions",
    "most_expensive_trees",
    "present",
    "session_window",
    "stacked_days",
]

GROUP_KEYS = ("agent", "model", "driver", "day")
# The window `octel costs` and the Costs view show when none is asked for.
COST_WINDOW = "7d"


@dataclass(frozen=True, slots=True)
class CostBreakdown:
    """Spend per `source` and each key of `by` over a window: rows most expensive first (only
    the keys grouped on set), `totals` over every row."""

    by: list[str]
    since: str | None
    until: str | None
    rows: list[CostRow]
    totals: CostTotals


def _ratio(cache_read: float, inp: float) -> float | None:
    denom = inp + cache_read
    return round(cache_read / denom, 4) if denom else None


def cost_breakdown(
    db: Session,
    by: Sequence[str],
    since: datetime | None = None,
    until: datetime | None = None,
) -> CostBreakdown:
    """Tokens by kind, cost, count and cache-hit ratio per `source` and each key of `by`.

    `by` is any of agent, model, driver, day (ValueError otherwise). Rows come most expensive
    first; `totals` covers every row.
    """
    keys = list(dict.fromkeys(by))
    return present(grouped_records(db, keys, since, until), keys, since, until)


def grouped_records(
    db: Session, keys: Sequence[str], since: datetime | None, until: datetime | None
) -> list[SpendRecord]:
    """Token sums by kind, unrounded cost and count per `source` and `keys`, most expensive
    first: the window's whole days from the daily summary, the rest from its rows."""
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    return window_groupings(db, since, until, [keys])[0]


def _row(rec: SpendRecord, keys: Sequence[str]) -> CostRow:
    """A record as a row holding only the group keys of `keys` (absent from its JSON else)."""
    tokens = rec.tokens()
    return CostRow.model_validate(
        {"source": rec.source}
        | {k: rec.key(k) for k in keys}
        | {
            "tokens": tokens,
            "tokens_total": sum(tokens.values()),
            "cost_usd": round(rec.cost_usd, 6),
            "count": rec.count,
            "cache_hit_ratio": _ratio(tokens["cache_read"], tokens["input"]),
        }
    )


def present(
    records: Sequence[SpendRecord], keys: Sequence[str], since: datetime | None, until: datetime | None
) -> CostBreakdown:
    """The answer of `cost_breakdown` from grouped records: rounded costs, totals, ratios."""
    rows = [_row(rec, keys) for rec in records]
    tokens = {k: sum(getattr(r.tokens, k) for r in rows) for k in TOKEN_KINDS}
    cost = 0.0
    for r in rows:  # summed in order, as the rows' rounded costs always were
        cost += r.cost_usd
    return CostBreakdown(
        by=list(keys),
        since=as_utc(since).isoformat() if since else None,
        until=as_utc(until).isoformat() if until else None,
        rows=rows,
        totals=CostTotals(
            tokens=Tokens(**tokens),
            tokens_total=sum(tokens.values()),
            cost_usd=round(cost, 6),
            count=sum(r.count for r in rows),
            cache_hit_ratio=_ratio(tokens["cache_read"], tokens["input"]),
        ),
    )


@dataclass
class _Merged:
    """One key value's rows being summed (`merge_sources`)."""

    key: str | None
    tokens: dict[str, int]
    cost_usd: float = 0.0
    count: int = 0
    sources: list[CostRow] = field(default_factory=list)


def merge_sources(rows: Sequence[CostRow], key: str) -> list[CostRow]:
    """Rows of `cost_breakdown(by=[key])` folded to one row per key value, the per-source
    rows inside it (`sources`), most expensive first: a day spent by OpenCode and by Claude
    runs is one day."""
    merged: dict[str | None, _Merged] = {}
    for r in rows:
        value = getattr(r, key)
        m = merged.setdefault(value, _Merged(value, dict.fromkeys(TOKEN_KINDS, 0)))
        for k in TOKEN_KINDS:
            m.tokens[k] += getattr(r.tokens, k)
        m.cost_usd = round(m.cost_usd + r.cost_usd, 6)
        m.count += r.count
        m.sources.append(CostRow.model_validate(r.model_dump(exclude_unset=True, exclude={key})))
    out = [
        CostRow(
            key=m.key,
            tokens=Tokens(**m.tokens),
            cost_usd=m.cost_usd,
            count=m.count,
            sources=m.sources,
            tokens_total=sum(m.tokens.values()),
            cache_hit_ratio=_ratio(m.tokens["cache_read"], m.tokens["input"]),
        )
        for m in merged.values()
    ]
    out.sort(key=lambda m: (-m.cost_usd, str(m.key)))
    return out


def _days_between(since: datetime | None, until: datetime | None) -> list[str]:
    """Every UTC day from `since` to `until` (none when either is open; at most a year)."""
    if since is None or until is None:
        return []
    first, last = as_utc(since).date(), as_utc(until).date()
    n = min((last - first).days, 366)
    return [(first + timedelta(days=i)).isoformat() for i in range(n + 1)]


def daily_series(
    db: Session, stack: str, since: datetime | None = None, until: datetime | None = None
) -> DailySeries:
    """Spend per day stacked by `stack` (agent or model), sources together: every day of the
    window (of the days with a cost when the window is open), and per stack key its cost on
    each of those days (0 when none)."""
    if stack not in ("agent", "model"):
        raise ValueError(f"cannot stack by {stack!r}; choose agent or model")
    return stacked_days(cost_breakdown(db, ["day", stack], since, until).rows, stack, since, until)


def stacked_days(
    rows: Sequence[CostRow], stack: str, since: datetime | None, until: datetime | None
) -> DailySeries:
    """`daily_series` from the rows of `cost_breakdown(by=["day", stack])`."""
    days = sorted({r.day for r in rows if r.day} | set(_days_between(since, until)))
    totals: dict[str | None, float] = {}
    cells: dict[tuple[str | None, str], float] = {}
    for r in rows:
        if not r.day:
            continue
        k = getattr(r, stack)
        totals[k] = totals.get(k, 0.0) + r.cost_usd
        cells[(k, r.day)] = cells.get((k, r.day), 0.0) + r.cost_usd
    keys = sorted(totals, key=lambda k: (-totals[k], str(k)))
    return DailySeries.model_validate(
        {
            "stack": stack,
            "days": days,
            "series": [
                {"key": k, "cost_usd": [round(cells.get((k, d), 0.0), 6) for d in days]} for k in keys
            ],
            "day_totals": [round(sum(cells.get((k, d), 0.0) for k in keys), 6) for d in days],
        }
    )
