"""Claude Code CLI runs: the newest-first list, keyset-paged on (created_at, id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, or_
from sqlmodel import Session, col, select

from telemetry.queries.fleet_models import RunPage, RunRecord
from telemetry.queries.paging import decode_cursor, encode_cursor
from telemetry.store.models import AgentRun
from telemetry.timeutil import as_utc

__all__ = ["RunFilter", "list_runs", "run_record"]


@dataclass(frozen=True, slots=True)
class RunFilter:
    agent: str | None = None
    task: str | None = None
    errors_only: bool = False
    since: datetime | None = None
    until: datetime | None = None
    limit: int = 50
    cursor: str | None = None


def run_record(r: AgentRun) -> RunRecord:
    """A stored Claude CLI run as the answers show it."""
    return RunRecord.model_validate(
        {
            "run_key": r.run_key,
            "task": r.task,
            "agent": r.agent,
            "session_id": r.session_id,
            "model": r.model,
            "subtype": r.subtype,
            "is_error": r.is_error,
            "exit_code": r.exit_code,
            "num_turns": r.num_turns,
            "duration_ms": r.duration_ms,
            "duration_api_ms": r.duration_api_ms,
            "cost_usd": r.cost_usd,
            "tokens": {
                "input": r.input_tokens,
                "output": r.output_tokens,
                "reasoning": 0,  # the Claude CLI reports none: the same five kinds as sessions
                "cache_read": r.cache_read_tokens,
                "cache_write": r.cache_creation_tokens,
            },
            "created_at": as_utc(r.created_at).isoformat(),
        }
    )


def list_runs(db: Session, f: RunFilter) -> RunPage:
    """A page of runs and the cursor of the next, newest first; filters and the page run in the database."""
    stmt = select(AgentRun)
    if f.agent is not None:
        stmt = stmt.where(AgentRun.agent == f.agent)
    if f.task is not None:
        stmt = stmt.where(AgentRun.task == f.task)
    if f.errors_only:
        stmt = stmt.where(col(AgentRun.is_error).is_(True))
    created, rid = col(AgentRun.created_at), col(AgentRun.id)
    if f.since is not None:
        stmt = stmt.where(created >= f.since)
    if f.until is not None:
        stmt = stmt.where(created < f.until)
    if f.cursor:
        at, row_id = decode_cursor(f.cursor)
        stmt = stmt.where(or_(created < at, and_(created == at, rid < row_id)))
    limit = max(1, f.limit)
    rows = db.exec(stmt.order_by(created.desc(), rid.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = encode_cursor(rows[-1].created_at, rows[-1].id or 0) if more and rows else None
    return RunPage(items=[run_record(r) for r in rows], next_cursor=nxt)
