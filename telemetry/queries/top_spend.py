"""The most expensive sessions and trees of a window, OpenCode sessions and Claude CLI runs
together: a Claude run is its own one-session tree, so the lists rank all spend alike.

Each item says its `source`: a session who wrote it (`opencode`, `claude_code`), a Claude CLI run
`claude`; a run carries its `run_key`, its task as the title and, when its conversation was
archived, the `session_id` it was linked to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col, select

from telemetry.queries.sessions import session_dict
from telemetry.store.models import AgentRun, SessionIndex
from telemetry.timeutil import as_utc

__all__ = ["most_expensive_sessions", "most_expensive_trees", "session_window", "time_window"]


def time_window(expr: Any, since: datetime | None, until: datetime | None) -> list[ColumnElement[bool]]:
    """`since <= expr < until`, each bound only when given."""
    out: list[ColumnElement[bool]] = []
    if since is not None:
        out.append(expr >= since)
    if until is not None:
        out.append(expr < until)
    return out


def session_window(since: datetime | None, until: datetime | None) -> list[ColumnElement[bool]]:
    """A session's time is its creation (else its archiving). A session is archived after it
    was created, so `archived_at >= since` holds for every session in the window: the
    redundant condition lets the database range-scan the archived_at index."""
    at = func.coalesce(col(SessionIndex.created_at), col(SessionIndex.archived_at))
    out = time_window(at, since, until)
    if since is not None:
        out.append(col(SessionIndex.archived_at) >= since)
    return out


def _runs(db: Session, since: datetime | None, until: datetime | None, limit: int) -> list[dict[str, Any]]:
    r = AgentRun
    stmt = (
        select(r)
        .where(*time_window(col(r.created_at), since, until))
        .order_by(col(r.cost_usd).desc(), col(r.id).desc())
        .limit(limit)
    )
    return [
        {
            "source": "claude",
            "run_key": run.run_key,
            "session_id": run.session_id,
            "agent": run.agent,
            "model": run.model,
            "title": run.task,
            "label": None,
            "verdict": None,
            "created_at": as_utc(run.created_at).isoformat(),
            "cost_usd": run.cost_usd,
            "subtree_cost_usd": run.cost_usd,
            "subtree_session_count": 1,
            "turn_count": run.num_turns,
            "is_error": run.is_error,
        }
        for run in db.exec(stmt).all()
    ]


def _ranked(items: list[dict[str, Any]], field: str, limit: int) -> list[dict[str, Any]]:
    return sorted(items, key=lambda x: -float(x[field] or 0.0))[:limit]


def most_expensive_sessions(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[dict[str, Any]]:
    """Sessions and Claude runs by their own cost, highest first."""
    limit = max(1, limit)
    stmt = (
        select(SessionIndex)
        .where(*session_window(since, until))
        .order_by(col(SessionIndex.cost_usd).desc(), col(SessionIndex.id).desc())
        .limit(limit)
    )
    sessions = [session_dict(s) for s in db.exec(stmt).all()]  # `source` as the index says
    return _ranked(sessions + _runs(db, since, until, limit), "cost_usd", limit)


def most_expensive_trees(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[dict[str, Any]]:
    """Root sessions by the cost of their whole indexed tree, and Claude runs, highest first."""
    limit = max(1, limit)
    si = SessionIndex
    roots = select(col(si.session_id)).where(
        col(si.parent_session_id).is_(None), *session_window(since, until)
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
        .limit(limit)
    )
    out = []
    for s, cost, n, tokens in db.exec(stmt).all():
        out.append(
            {
                "source": s.source,
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
    return _ranked(out + _runs(db, since, until, limit), "subtree_cost_usd", limit)
