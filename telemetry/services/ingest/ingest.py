"""What dispatchers report: cycle begin/finish, heartbeats and Claude CLI runs.

Each function is one idempotent write inside the caller's transaction: a retried call finds its
row and changes nothing, so counters in `aggregates` move exactly once per event.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal, TypeVar, get_args

from sqlmodel import Session, select

from archiver.claude.result import parse_claude_result
from archiver.redact import Redactor
from telemetry.services.ingest import cycle_rows
from telemetry.services.ingest.ingest_inputs import (
    AgentRunIn,
    ConflictError,
    CycleBegin,
    CycleFinish,
    HeartbeatIn,
)
from telemetry.services.redaction import clip_to_columns, redact_model
from telemetry.services.spend.spend_links import cycles_changed
from telemetry.store import aggregates
from telemetry.store.cycle_row import CycleRow, CycleValues
from telemetry.store.locks import lock_key
from telemetry.store.models import AgentRun, Cycle, Daemon
from telemetry.timeutil import as_utc

__all__ = [
    "AgentRunIn",
    "C",
    "ConflictError",
    "CycleBegin",
    "CycleFinish",
    "HeartbeatIn",
    "add_agent_run",
    "begin_clean",
    "begin_cycle",
    "clean",
    "cycle_lock_keys",
    "finish_clean",
    "finish_cycle",
    "heartbeat",
]

C = TypeVar("C", CycleBegin, CycleFinish)

_Count = Literal["candidates_count", "claims_count", "swept_count", "processed_count", "escalated_count"]
_COUNTS: tuple[_Count, ...] = get_args(_Count)
# what a begin says that a finish may not have: a late begin fills them in
_Begun = Literal["host", "pid", "candidates_count", "claims_count", "swept_count", "session_id"]
_BEGIN_FIELDS: tuple[_Begun, ...] = get_args(_Begun)


def clean(redactor: Redactor, p: C) -> C:
    """A cycle's begin or finish as it may be stored: redacted, cut to the columns."""
    return redact_model(redactor, p, Cycle)


def cycle_lock_keys(p: CycleBegin | CycleFinish) -> list[str]:
    """The advisory lock keys a write of the cleaned `p` takes: its cycle, and the spend links
    of the cycle and the session it names (`spend_links.cycles_changed`). A finish that moves a
    cycle to another session takes the link of the session it named before too, once it has
    read the row."""
    keys = [f"cycle:{p.cycle_id}", f"spend:{p.cycle_id}"]
    return [*keys, f"spend:{p.session_id}"] if p.session_id else keys


def begin_cycle(db: Session, p: CycleBegin, now: datetime, *, redactor: Redactor) -> tuple[CycleRow, bool]:
    """Write a cycle at its start; (row, created). A late begin fills a synthesised start."""
    return begin_clean(db, clean(redactor, p), now)


def begin_clean(db: Session, p: CycleBegin, now: datetime) -> tuple[CycleRow, bool]:
    """`begin_cycle` for a begin already through `clean`. Raises ConflictError before it
    writes anything (what a group commit relies on)."""
    lock_key(db, "cycle", p.cycle_id)
    raw = {"begin": p.model_dump(mode="json", exclude_none=True)}
    new = cycle_rows.insert_new(
        db,
        {
            "cycle_id": p.cycle_id,
            "driver": p.driver,
            "started_at": p.started_at or now,
            "start_synthesised": False,
            "raw": raw,
            "updated_at": now,
            "host": p.host,
            "pid": p.pid,
            "candidates_count": p.candidates_count,
            "claims_count": p.claims_count,
            "swept_count": p.swept_count,
            "session_id": p.session_id,
        },
    )
    if new is not None:
        cycles_changed(db, [(new.cycle_id, new.session_id)])  # the driver of sessions it names
        return new, True
    row = cycle_rows.read(db, p.cycle_id)
    if row is None:  # deleted since the insert met it (retention): insert it now
        return begin_clean(db, p, now)
    if row.driver != p.driver:
        raise ConflictError(f"cycle_id {p.cycle_id!r} belongs to driver {row.driver!r}")
    if not row.start_synthesised or "begin" in (row.raw or {}):
        return row, False  # a retried begin
    # a late begin: the finish came first and synthesised the start
    changed = CycleValues()
    for k in _BEGIN_FIELDS:
        if getattr(row, k) is None:
            changed[k] = getattr(p, k)
    start = p.started_at or as_utc(row.started_at)
    if row.ended_at is None or start <= as_utc(row.ended_at):
        changed |= {"started_at": start, "start_synthesised": False}
    changed |= {"raw": {**(row.raw or {}), **raw}, "updated_at": now}
    links = (as_utc(row.started_at), row.session_id)
    row = cycle_rows.update_row(db, row, changed)
    if (as_utc(row.started_at), row.session_id) != links:  # which cycle is a session's newest
        cycles_changed(db, [(row.cycle_id, row.session_id)])
    return row, False


def finish_cycle(db: Session, p: CycleFinish, now: datetime, *, redactor: Redactor) -> tuple[CycleRow, bool]:
    """Close a cycle; (row, changed). A finish for an unknown cycle synthesises its start."""
    return finish_clean(db, clean(redactor, p), now)


def finish_clean(db: Session, p: CycleFinish, now: datetime) -> tuple[CycleRow, bool]:
    """`finish_cycle` for a finish already through `clean`. Raises ConflictError before it
    writes anything (what a group commit relies on)."""
    lock_key(db, "cycle", p.cycle_id)
    row = cycle_rows.read(db, p.cycle_id)
    ended = p.ended_at or now
    raw = {"finish": p.model_dump(mode="json", exclude_none=True)}
    if row is not None:
        if row.driver != p.driver:
            raise ConflictError(f"cycle_id {p.cycle_id!r} belongs to driver {row.driver!r}")
        if row.ended_at is not None:
            return row, False  # a retried finish
        if ended < as_utc(row.started_at) and not row.start_synthesised:
            raise ConflictError(
                f"ended_at {ended.isoformat()} is before cycle {p.cycle_id!r} started "
                f"({as_utc(row.started_at).isoformat()})"
            )
    changed = CycleValues(
        ended_at=ended,
        terminal_state=p.terminal_state,
        worker_outcome=p.worker_outcome,
        error_kind=p.error_kind,
        worker_wallclock_seconds=p.worker_wallclock_seconds,
    )
    for k in _COUNTS:
        if (n := getattr(p, k)) is not None:
            changed[k] = n
    changed["updated_at"] = now
    linked: str | None  # the session the cycle named before ("": the cycle is new)
    if row is None:
        start = p.started_at
        if start is None and p.worker_wallclock_seconds is not None:
            start = ended - timedelta(seconds=p.worker_wallclock_seconds)
        new = cycle_rows.insert_new(
            db,
            {
                "cycle_id": p.cycle_id,
                "driver": p.driver,
                "started_at": start or ended,
                "start_synthesised": True,
                "session_id": p.session_id,
                "raw": raw,
                **changed,
            },
        )
        if new is None:  # stored meanwhile by a writer without the cycle's lock: finish that
            return finish_clean(db, p, now)
        row, linked = new, ""
        observed = p.started_at is not None or p.worker_wallclock_seconds is not None
    else:
        linked = row.session_id
        changed |= {"session_id": p.session_id or row.session_id, "raw": {**(row.raw or {}), **raw}}
        row = cycle_rows.update_row(db, row, changed)
        observed = True
    if row.session_id != linked:  # a new cycle, or one that names another session now
        # the summary before the counters, in the order every writer takes them
        cycles_changed(db, [(row.cycle_id, row.session_id), (row.cycle_id, linked or None)])
    labels = {
        "driver": p.driver,
        "terminal_state": p.terminal_state,
        "worker_outcome": p.worker_outcome or "",
    }
    with aggregates.coalesced(db):  # every counter of this finish in one statement
        aggregates.bump(db, "cycles_total", labels, 1)
        if observed:
            aggregates.observe_cycle_duration(db, p.driver, (ended - as_utc(row.started_at)).total_seconds())
    return row, True


def heartbeat(
    db: Session, p: HeartbeatIn, now: datetime, *, redactor: Redactor, source: str = "http"
) -> Daemon:
    """Record a beat; the newest beat wins when retries arrive out of order."""
    p = redact_model(redactor, p, Daemon)
    at = p.at or now
    lock_key(db, "daemon", f"{p.driver}/{p.host}")
    row = db.exec(select(Daemon).where(Daemon.driver == p.driver, Daemon.host == p.host)).first()
    if row is None:
        row = Daemon(driver=p.driver, host=p.host, first_seen_at=at, last_heartbeat_at=at)
    elif as_utc(row.last_heartbeat_at) > at:
        return row
    row.pid, row.in_flight_cycle_id, row.last_heartbeat_at, row.source = (
        p.pid,
        p.in_flight_cycle_id,
        at,
        source,
    )
    db.add(row)
    db.flush()
    return row


def add_agent_run(db: Session, p: AgentRunIn, now: datetime, *, redactor: Redactor) -> tuple[AgentRun, bool]:
    """Store one Claude CLI run; (row, created). Raises ClaudeResultError on a bad result."""
    p = redact_model(redactor, p, AgentRun)
    cols = clip_to_columns(parse_claude_result(p.result), AgentRun)  # from the redacted result
    lock_key(db, "agent_run", cols["run_key"])
    row = db.exec(select(AgentRun).where(AgentRun.run_key == cols["run_key"])).first()
    if row is not None:
        return row, False
    # A CLI that exits non-zero failed, whatever its last result event claimed.
    cols["is_error"] = cols["is_error"] or p.exit_code not in (None, 0)
    row = AgentRun(task=p.task, agent=p.agent, exit_code=p.exit_code, created_at=now, **cols)
    db.add(row)
    labels = {"agent": p.agent or "", "model": cols["model"] or ""}
    with aggregates.coalesced(db):
        outcome = "error" if row.is_error else "success"
        aggregates.bump(db, "agent_runs_total", {**labels, "outcome": outcome}, 1)
        aggregates.bump(db, "agent_run_cost_usd_total", labels, cols["cost_usd"])
        for kind, n in (
            ("input", cols["input_tokens"]),
            ("output", cols["output_tokens"]),
            ("cache_read", cols["cache_read_tokens"]),
            ("cache_write", cols["cache_creation_tokens"]),
        ):
            aggregates.bump(db, "agent_run_tokens_total", {**labels, "kind": kind}, n)
    db.flush()
    return row, True
