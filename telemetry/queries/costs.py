"""Cost rollups over OpenCode sessions and Claude CLI runs together, grouped in SQL.

A session counts at its creation time (its archive time when the server did not say); a Claude
run at the time it was recorded. A session's driver is the driver of its cycle, the same link
`linked_cycle` follows: the archive's `cycle_id` (or a label that is a cycle id), else a cycle
posted with the session's (or its root's) id. A label is never taken for a driver; Claude runs
carry no driver.
Tokens follow DESIGN.md: input excludes cache reads and writes, so the cache-hit ratio is
cache_read / (input + cache_read).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, case, cast, exists, func, literal, null, union_all
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.top_spend import (
    most_expensive_sessions,
    most_expensive_trees,
    session_window,
    time_window,
)
from telemetry.store.models import AgentRun, Cycle, SessionIndex
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


def _day(db: Session, ts: Any) -> ColumnElement[Any]:
    if db.get_bind().dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", ts), "YYYY-MM-DD")
    return func.strftime("%Y-%m-%d", ts)  # SQLite stores UTC text; strftime reads it


def _ratio(cache_read: float, inp: float) -> float | None:
    denom = inp + cache_read
    return round(cache_read / denom, 4) if denom else None


def _cycle_driver(match: ColumnElement[bool]) -> Any:
    """The driver of the newest cycle matching `match`: one index lookup per session."""
    c = Cycle
    newest = col(c.started_at).desc(), col(c.id).desc()
    return sa_select(col(c.driver)).where(match).order_by(*newest).limit(1).scalar_subquery()


def _sessions_part(db: Session, since: datetime | None, until: datetime | None, with_driver: bool) -> Any:
    si = SessionIndex
    at = func.coalesce(col(si.created_at), col(si.archived_at))
    driver: Any = cast(null(), String)
    if with_driver:
        driver = func.coalesce(
            _cycle_driver(col(Cycle.cycle_id) == col(si.cycle_id)),
            _cycle_driver(col(Cycle.cycle_id) == col(si.label)),
            _cycle_driver(col(Cycle.session_id) == col(si.session_id)),
            _cycle_driver(col(Cycle.session_id) == col(si.root_session_id)),
        )
    return (
        sa_select(
            case((col(si.source) == "claude_code", literal("claude")), else_=literal("opencode")).label(
                "source"
            ),
            col(si.agent).label("agent"),
            col(si.model).label("model"),
            driver.label("driver"),
            _day(db, at).label("day"),
            col(si.tokens_input).label("t_input"),
            col(si.tokens_output).label("t_output"),
            col(si.tokens_reasoning).label("t_reasoning"),
            col(si.tokens_cache_read).label("t_cache_read"),
            col(si.tokens_cache_write).label("t_cache_write"),
            col(si.cost_usd).label("cost"),
        )
        .select_from(si)
        .where(*session_window(since, until))
    )


def _runs_part(db: Session, since: datetime | None, until: datetime | None) -> Any:
    """Claude runs whose conversation is not archived: an archived one is counted through its
    sessions (the tree's own costs, subagents included), never twice."""
    r = AgentRun
    archived = exists().where(col(SessionIndex.session_id) == col(r.session_id))
    return sa_select(
        literal("claude").label("source"),
        col(r.agent).label("agent"),
        col(r.model).label("model"),
        cast(null(), String).label("driver"),
        _day(db, col(r.created_at)).label("day"),
        col(r.input_tokens).label("t_input"),
        col(r.output_tokens).label("t_output"),
        literal(0).label("t_reasoning"),
        col(r.cache_read_tokens).label("t_cache_read"),
        col(r.cache_creation_tokens).label("t_cache_write"),
        col(r.cost_usd).label("cost"),
    ).where(*time_window(col(r.created_at), since, until), ~archived)


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
    """Token sums by kind, unrounded cost and count per `source` and `keys`, most expensive first."""
    bad = [k for k in keys if k not in GROUP_KEYS]
    if bad:
        raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(GROUP_KEYS)}")
    both = union_all(
        _sessions_part(db, since, until, with_driver="driver" in keys), _runs_part(db, since, until)
    ).subquery("u")
    group = [both.c.source, *(both.c[k] for k in keys)]
    sums = [func.sum(both.c[f"t_{k}"]).label(k) for k in TOKEN_KINDS]
    cost = func.sum(both.c.cost).label("cost_usd")
    stmt = sa_select(*group, *sums, cost, func.count().label("count")).group_by(*group)
    stmt = stmt.order_by(cost.desc(), *group)
    return [
        {"source": rec["source"], **{k: rec[k] for k in keys}}
        | {k: int(rec[k] or 0) for k in TOKEN_KINDS}
        | {"cost_usd": float(rec["cost_usd"] or 0.0), "count": int(rec["count"])}
        for rec in db.connection().execute(stmt).mappings().all()
    ]


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
