"""Cost rollups over OpenCode sessions and Claude CLI runs together, grouped in SQL.

A session counts at its creation time (its archive time when the server did not say); a Claude
run at the time it was recorded. A session's driver is the driver of its cycle (joined through
`cycle_id`, or through a label that names a cycle), else its label; Claude runs carry no driver.
Tokens follow DESIGN.md: input excludes cache reads and writes, so the cache-hit ratio is
cache_read / (input + cache_read).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import String, cast, func, literal, null, union_all
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.sessions import session_dict
from telemetry.store.models import AgentRun, Cycle, SessionIndex
from telemetry.timeutil import as_utc

__all__ = [
    "GROUP_KEYS",
    "TOKEN_KINDS",
    "cost_breakdown",
    "most_expensive_sessions",
    "most_expensive_trees",
]

GROUP_KEYS = ("agent", "model", "driver", "day")


def _day(db: Session, ts: Any) -> ColumnElement[Any]:
    if db.get_bind().dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", ts), "YYYY-MM-DD")
    return func.strftime("%Y-%m-%d", ts)  # SQLite stores UTC text; strftime reads it


def _window(expr: Any, since: datetime | None, until: datetime | None) -> list[ColumnElement[bool]]:
    out: list[ColumnElement[bool]] = []
    if since is not None:
        out.append(expr >= since)
    if until is not None:
        out.append(expr < until)
    return out


def _session_window(since: datetime | None, until: datetime | None) -> list[ColumnElement[bool]]:
    """A session's time is its creation (else its archiving). A session is archived after it
    was created, so `archived_at >= since` holds for every session in the window: the
    redundant condition lets the database range-scan the archived_at index."""
    at = func.coalesce(col(SessionIndex.created_at), col(SessionIndex.archived_at))
    out = _window(at, since, until)
    if since is not None:
        out.append(col(SessionIndex.archived_at) >= since)
    return out


def _ratio(cache_read: float, inp: float) -> float | None:
    denom = inp + cache_read
    return round(cache_read / denom, 4) if denom else None


def _sessions_part(db: Session, since: datetime | None, until: datetime | None, with_driver: bool) -> Any:
    si = SessionIndex
    at = func.coalesce(col(si.created_at), col(si.archived_at))
    driver: Any = cast(null(), String)
    stmt_from: Any = si
    if with_driver:
        link = func.coalesce(col(si.cycle_id), col(si.label))
        stmt_from = si.__table__.outerjoin(  # type: ignore[attr-defined]
            Cycle.__table__,  # type: ignore[attr-defined]
            col(Cycle.cycle_id) == link,
        )
        driver = func.coalesce(col(Cycle.driver), col(si.label))
    return (
        sa_select(
            literal("opencode").label("source"),
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
        .select_from(stmt_from)
        .where(*_session_window(since, until))
    )


def _runs_part(db: Session, since: datetime | None, until: datetime | None) -> Any:
    r = AgentRun
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
    ).where(*_window(col(r.created_at), since, until))


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
    rows = []
    totals: dict[str, Any] = {k: 0 for k in TOKEN_KINDS} | {"cost_usd": 0.0, "count": 0}
    for rec in db.connection().execute(stmt).mappings().all():
        tokens = {k: int(rec[k] or 0) for k in TOKEN_KINDS}
        row: dict[str, Any] = {"source": rec["source"]}
        row.update({k: rec[k] for k in keys})
        row.update(
            {
                "tokens": tokens,
                "tokens_total": sum(tokens.values()),
                "cost_usd": round(float(rec["cost_usd"] or 0.0), 6),
                "count": int(rec["count"]),
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
        "by": keys,
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


def most_expensive_sessions(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[dict[str, Any]]:
    """Sessions by their own cost, highest first."""
    stmt = (
        select(SessionIndex)
        .where(*_session_window(since, until))
        .order_by(col(SessionIndex.cost_usd).desc(), col(SessionIndex.id).desc())
        .limit(max(1, limit))
    )
    return [session_dict(s) for s in db.exec(stmt).all()]


def most_expensive_trees(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[dict[str, Any]]:
    """Root sessions by the cost of their whole indexed tree, highest first."""
    si = SessionIndex
    roots = select(col(si.session_id)).where(
        col(si.parent_session_id).is_(None), *_session_window(since, until)
    )
    tree_cost = func.sum(col(si.cost_usd)).label("subtree_cost_usd")
    agg = (
        select(
            col(si.root_session_id).label("root"),
            tree_cost,
            func.count().label("session_count"),
            func.sum(
                col(si.tokens_input)
                + col(si.tokens_output)
                + col(si.tokens_reasoning)
                + col(si.tokens_cache_read)
                + col(si.tokens_cache_write)
            ).label("subtree_tokens"),
        )
        .where(col(si.root_session_id).in_(roots))
        .group_by(col(si.root_session_id))
        .subquery("t")
    )
    stmt = (
        select(si, agg.c.subtree_cost_usd, agg.c.session_count, agg.c.subtree_tokens)
        .join(agg, agg.c.root == col(si.session_id))
        .order_by(agg.c.subtree_cost_usd.desc(), col(si.id).desc())
        .limit(max(1, limit))
    )
    out = []
    for s, cost, n, tokens in db.exec(stmt).all():
        out.append(
            {
                "session_id": s.session_id,
                "agent": s.agent,
                "model": s.model,
                "title": s.title,
                "label": s.label,
                "verdict": s.verdict,
                "created_at": as_utc(s.created_at).isoformat() if s.created_at else None,
                "archived_at": as_utc(s.archived_at).isoformat(),
                "cost_usd": s.cost_usd,
                "subtree_cost_usd": round(float(cost or 0.0), 6),
                "subtree_tokens": int(tokens or 0),
                "subtree_session_count": int(n),
            }
        )
    return out
