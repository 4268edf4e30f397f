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
from datetime import datetime, timedelta
from typing import Any

from sqlmodel import Session

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.spend_read import window_groupings
from telemetry.queries.top_spend import most_expensive_sessions, most_expensive_trees, session_window
from telemetry.timeutil import as_utc

__all__ = [
    "COST_WINDOW",
    "GROUP_KEYS",
    "TOKEN_KINDS",
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


def _ratio(cache_read: float, inp: float) -> float | None:
    denom = inp + cache_read
    return round(cache_read / denom, 4) if denom else None


def cost_breakdown(
    db: Session,
    by: Sequence[str],
    since: datetime | None = None,
    until: datetime | None = None,
) -> dict[str, Any]:
    """Tokens by kind, cost, count and cache-hit ratio per `source` and each key of `by`.

    `by` is any of agent, model, driver, day (ValueError otherwise). Rows come most expensive
    first; `totals` covers every row.
    """
    keys = list(dict.fromkeys(by))
    return present(grouped_records(db, keys, since, until), keys, since, until)


def grouped_records(
    db: Session, keys: Sequence[str], since: datetime | None, until: datetime | None
) -> list[dict[str, Any]]:
    """Token sums by kind, unrounded cost and count per `source` and `keys`, most expensive
    first: the window's whole days from the daily summary, the rest from its rows."""
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    return window_groupings(db, since, until, [keys])[0]


def present(
    records: Sequence[dict[str, Any]], keys: Sequence[str], since: datetime | None, until: datetime | None
) -> dict[str, Any]:
    """The answer of `cost_breakdown` from grouped records: rounded costs, totals, ratios."""
    rows = []
    totals: dict[str, Any] = {k: 0 for k in TOKEN_KINDS} | {"cost_usd": 0.0, "count": 0}
    for rec in records:
        tokens = {k: rec[k] for k in TOKEN_KINDS}
        row: dict[str, Any] = {"source": rec["source"]}
        row.update({k: rec[k] for k in keys})
        row.update(
            {
                "tokens": tokens,
                "tokens_total": sum(tokens.values()),
                "cost_usd": round(rec["cost_usd"], 6),
                "count": rec["count"],
                "cache_hit_ratio": _ratio(tokens["cache_read"], tokens["input"]),
            }
        )
        rows.append(row)
        for k in TOKEN_KINDS:
            totals[k] += tokens[k]
        totals["cost_usd"] += row["cost_usd"]
        totals["count"] += row["count"]
    total_tokens = {k: totals.pop(k) for k in TOKEN_KINDS}
    return {
        "by": list(keys),
        "since": as_utc(since).isoformat() if since else None,
        "until": as_utc(until).isoformat() if until else None,
        "rows": rows,
        "totals": {
            "tokens": total_tokens,
            "tokens_total": sum(total_tokens.values()),
            "cost_usd": round(totals["cost_usd"], 6),
            "count": totals["count"],
            "cache_hit_ratio": _ratio(total_tokens["cache_read"], total_tokens["input"]),
        },
    }


def merge_sources(rows: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """Rows of `cost_breakdown(by=[key])` folded to one row per key value, the per-source
    rows inside it (`sources`), most expensive first: a day spent by OpenCode and by Claude
    runs is one day."""
    merged: dict[Any, dict[str, Any]] = {}
    for r in rows:
        m = merged.setdefault(
            r[key],
            {
                "key": r[key],
                "tokens": dict.fromkeys(TOKEN_KINDS, 0),
                "cost_usd": 0.0,
                "count": 0,
                "sources": [],
            },
        )
        for k in TOKEN_KINDS:
            m["tokens"][k] += r["tokens"][k]
        m["cost_usd"] = round(m["cost_usd"] + r["cost_usd"], 6)
        m["count"] += r["count"]
        m["sources"].append({k: v for k, v in r.items() if k != key})
    out = list(merged.values())
    for m in out:
        m["tokens_total"] = sum(m["tokens"].values())
        m["cache_hit_ratio"] = _ratio(m["tokens"]["cache_read"], m["tokens"]["input"])
    out.sort(key=lambda m: (-m["cost_usd"], str(m["key"])))
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
) -> dict[str, Any]:
    """Spend per day stacked by `stack` (agent or model), sources together: every day of the
    window (of the days with a cost when the window is open), and per stack key its cost on
    each of those days (0 when none)."""
    if stack not in ("agent", "model"):
        raise ValueError(f"cannot stack by {stack!r}; choose agent or model")
    return stacked_days(cost_breakdown(db, ["day", stack], since, until)["rows"], stack, since, until)


def stacked_days(
    rows: Sequence[dict[str, Any]], stack: str, since: datetime | None, until: datetime | None
) -> dict[str, Any]:
    """`daily_series` from the rows of `cost_breakdown(by=["day", stack])`."""
    days = sorted({r["day"] for r in rows if r["day"]} | set(_days_between(since, until)))
    totals: dict[Any, float] = {}
    cells: dict[tuple[Any, str], float] = {}
    for r in rows:
        if not r["day"]:
            continue
        totals[r[stack]] = totals.get(r[stack], 0.0) + r["cost_usd"]
        cells[(r[stack], r["day"])] = cells.get((r[stack], r["day"]), 0.0) + r["cost_usd"]
    keys = sorted(totals, key=lambda k: (-totals[k], str(k)))
    return {
        "stack": stack,
        "days": days,
        "series": [{"key": k, "cost_usd": [round(cells.get((k, d), 0.0), 6) for d in days]} for k in keys],
        "day_totals": [round(sum(cells.get((k, d), 0.0) for k in keys), 6) for d in days],
    }
