"""The most expensive sessions and trees of a window, OpenCode sessions and Claude CLI runs
together: a Claude run is its own one-session tree, so the lists rank all spend alike.

Each item says its `source`: a session who wrote it (`opencode`, `claude_code`), a Claude CLI run
`claude`; a run carries its `run_key`, its task as the title and, when its conversation was
archived, the `session_id` it was linked to.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import func, text
from sqlalchemy.sql.elements import ColumnElement, TextClause
from sqlmodel import Session, col, select

from telemetry.queries.fleet_models import TopSpend, TopTree
from telemetry.queries.sessions import session_record
from telemetry.store.models import TREE_ROOTS, AgentRun, SessionIndex
from telemetry.timeutil import as_utc

__all__ = ["most_expensive_sessions", "most_expensive_trees", "session_window", "time_window"]

# the dearest roots of all time a window's dearest trees are looked for among first
_CANDIDATES = 2000

Top = TypeVar("Top", bound=TopSpend)


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


def _runs(
    db: Session, since: datetime | None, until: datetime | None, limit: int, as_: type[Top]
) -> list[Top]:
    """The window's dearest Claude runs, each a tree of one, as items of the list `as_` is of."""
    r = AgentRun
    stmt = (
        select(r)
        .where(*time_window(col(r.created_at), since, until))
        .order_by(col(r.cost_usd).desc(), col(r.id).desc())
        .limit(limit)
    )
    return [
        as_(
            source="claude",
            run_key=run.run_key,
            session_id=run.session_id,
            agent=run.agent,
            model=run.model,
            title=run.task,
            label=None,
            verdict=None,
            created_at=as_utc(run.created_at).isoformat(),
            cost_usd=run.cost_usd,
            subtree_cost_usd=run.cost_usd,
            subtree_session_count=1,
            turn_count=run.num_turns,
            is_error=run.is_error,
        )
        for run in db.exec(stmt).all()
    ]


def _ranked(items: list[Top], field: str, limit: int) -> list[Top]:
    return sorted(items, key=lambda x: -float(getattr(x, field) or 0.0))[:limit]


def most_expensive_sessions(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[TopSpend]:
    """Sessions and Claude runs by their own cost, highest first."""
    limit = max(1, limit)
    stmt = (
        select(SessionIndex)
        .where(*session_window(since, until))
        .order_by(col(SessionIndex.cost_usd).desc(), col(SessionIndex.id).desc())
        .limit(limit)
    )
    # each with its index record's fields, `source` as the index says
    sessions = [TopSpend.model_validate(session_record(s).model_dump()) for s in db.exec(stmt).all()]
    return _ranked(sessions + _runs(db, since, until, limit, TopSpend), "cost_usd", limit)


def _tree_roots(db: Session) -> list[TextClause]:
    """The rows of `ix_session_index_tree_cost`, in its words (a bound 0 would not tell the
    planner that the partial index holds them). SQLite is told that most rows are roots
    (`likely`), or it finds them through the parent index and sorts them all."""
    if db.get_bind().dialect.name == "sqlite":
        return [text(TREE_ROOTS.replace("parent_session_id IS NULL", "likely(parent_session_id IS NULL)"))]
    return [text(TREE_ROOTS)]


def _dearest_roots(db: Session, since: datetime | None, until: datetime | None, limit: int) -> list[int]:
    """The ids of the `limit` roots of the window with the dearest indexed trees, dearest first.

    First from the dearest roots of all time down, `_CANDIDATES` of them, read from
    `ix_session_index_tree_cost` alone: any window of days out of a longer history holds its
    dearest few among them. A window that does not (a narrow or an old one) is read by time
    instead, its roots sorted: the same answer, in time proportional to the window."""
    si = SessionIndex
    cost, ident = col(si.tree_cost_usd), col(si.id)
    cand = (
        select(ident, cost, col(si.created_at), col(si.archived_at))
        .where(*_tree_roots(db))
        .order_by(cost.desc(), ident.desc())
        .limit(_CANDIDATES)
        .subquery("cand")
    )
    at = func.coalesce(cand.c.created_at, cand.c.archived_at)
    stmt = (
        select(cand.c.id)
        .where(*time_window(at, since, until))
        .order_by(cand.c.tree_cost_usd.desc(), cand.c.id.desc())
        .limit(limit)
    )
    ids = list(db.exec(stmt).all())
    if len(ids) < limit:
        # `+ 0`: not the cost index for the order, the window's time indexes for the rows
        by_time = (
            select(ident)
            .where(*_tree_roots(db), *session_window(since, until))
            .order_by((cost + 0).desc(), ident.desc())
            .limit(limit)
        )
        ids = list(db.exec(by_time).all())
    return [int(i) for i in ids]


def most_expensive_trees(
    db: Session, since: datetime | None = None, until: datetime | None = None, limit: int = 10
) -> list[TopTree]:
    """Root sessions created in the window by the cost of their whole indexed tree (every
    index row naming them as their root, kept on the root's row), and Claude runs, highest
    first."""
    limit = max(1, limit)
    si = SessionIndex
    ids = _dearest_roots(db, since, until, limit)
    rows = db.exec(select(si).where(col(si.id).in_(ids))).all() if ids else []
    out: list[TopTree] = []
    for s in sorted(rows, key=lambda r: (-r.tree_cost_usd, -(r.id or 0))):
        cost, n, tokens = s.tree_cost_usd, s.tree_session_count, s.tree_tokens
        out.append(
            TopTree.model_validate(
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
        )
    return _ranked(out + _runs(db, since, until, limit, TopTree), "subtree_cost_usd", limit)
