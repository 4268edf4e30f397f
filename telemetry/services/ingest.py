"""What dispatchers report: cycle begin/finish, heartbeats and Claude CLI runs.

Each function is one idempotent write inside the caller's transaction: a retried call finds its
row and changes nothing, so counters in `aggregates` move exactly once per event.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    StringConstraints,
    model_validator,
)
from sqlmodel import Session, select

from archiver.redact import Redactor
from telemetry.services.bounds import INT32_MAX, MAX_SECONDS, JsonObject, iso_time_only, no_nul
from telemetry.services.claude import parse_claude_result
from telemetry.services.redaction import clip_to_columns, redact_model
from telemetry.services.spend_links import cycles_changed
from telemetry.store import aggregates
from telemetry.store.locks import lock_key
from telemetry.store.models import AgentRun, Cycle, Daemon
from telemetry.timeutil import as_utc, checked_utc

__all__ = [
    "AgentRunIn",
    "ConflictError",
    "CycleBegin",
    "CycleFinish",
    "HeartbeatIn",
    "add_agent_run",
    "begin_cycle",
    "finish_cycle",
    "heartbeat",
]

_Text = AfterValidator(no_nul)


def _not_blank(v: str) -> str:
    if not v:
        raise ValueError("must not be blank")
    return v


# lengths are checked as sent (what the published schema says), whitespace stripped after
_Strip = AfterValidator(str.strip)
_Filled = AfterValidator(_not_blank)
Name = Annotated[str, StringConstraints(min_length=1, max_length=100), _Strip, _Filled, _Text]
Ident = Annotated[str, StringConstraints(min_length=1, max_length=200), _Strip, _Filled, _Text]
Label = Annotated[str, StringConstraints(max_length=200), _Strip, _Text]
# counts, pids and exit codes are INTEGER columns: 32 bits on PostgreSQL; strict, so `false`
# or "5" is refused as the schema says rather than read as a number
Count = Annotated[int, Strict(), Field(ge=0, le=INT32_MAX)]
Pid = Annotated[int, Strict(), Field(ge=1, le=INT32_MAX)]
ExitCode = Annotated[int, Strict(), Field(ge=-INT32_MAX - 1, le=INT32_MAX)]
Seconds = Annotated[float, Strict(), Field(ge=0, le=MAX_SECONDS)]
UtcTime = Annotated[datetime, BeforeValidator(iso_time_only), AfterValidator(checked_utc)]


class ConflictError(ValueError):
    """The request contradicts what is stored (for example a cycle id owned by another driver)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class CycleBegin(_Strict):
    cycle_id: Ident
    driver: Name
    started_at: UtcTime | None = None
    host: Label | None = None
    pid: Pid | None = None
    candidates_count: Count | None = None
    claims_count: Count | None = None
    swept_count: Count | None = None
    session_id: Ident | None = None
    meta: JsonObject | None = None


class CycleFinish(_Strict):
    """A finish; `ended_at` may not come before the start it or the stored cycle carries."""

    cycle_id: Ident
    driver: Name
    terminal_state: Name
    worker_outcome: Name | None = None
    error_kind: Label | None = None
    started_at: UtcTime | None = None
    ended_at: UtcTime | None = None
    session_id: Ident | None = None
    candidates_count: Count | None = None
    claims_count: Count | None = None
    swept_count: Count | None = None
    processed_count: Count | None = None
    escalated_count: Count | None = None
    worker_wallclock_seconds: Seconds | None = None
    meta: JsonObject | None = None

    @model_validator(mode="after")
    def _ends_after_start(self) -> CycleFinish:
        if self.started_at and self.ended_at and self.ended_at < self.started_at:
            raise ValueError("ended_at is before started_at")
        if self.ended_at and self.worker_wallclock_seconds and self.started_at is None:
            try:  # the start a finish without one gets
                self.ended_at - timedelta(seconds=self.worker_wallclock_seconds)
            except OverflowError:
                raise ValueError("worker_wallclock_seconds reaches back before year 1") from None
        return self


class HeartbeatIn(_Strict):
    driver: Name
    host: Annotated[str, StringConstraints(min_length=1, max_length=255), _Strip, _Filled, _Text]
    pid: Pid | None = None
    in_flight_cycle_id: Ident | None = None
    at: UtcTime | None = None


class AgentRunIn(_Strict):
    task: Label | None = None
    agent: Name | None = None
    exit_code: ExitCode | None = None
    # The CLI's result text can be long (a stream-json transcript); 64 MiB bounds a mistake.
    result: JsonObject | Annotated[str, StringConstraints(max_length=64 * 2**20)]


_COUNTS = ("candidates_count", "claims_count", "swept_count", "processed_count", "escalated_count")


def _cycle(db: Session, cycle_id: str) -> Cycle | None:
    return db.exec(select(Cycle).where(Cycle.cycle_id == cycle_id)).first()


def begin_cycle(db: Session, p: CycleBegin, now: datetime, *, redactor: Redactor) -> tuple[Cycle, bool]:
    """Write a cycle at its start; (row, created). A late begin fills a synthesised start."""
    p = redact_model(redactor, p, Cycle)
    lock_key(db, "cycle", p.cycle_id)
    row = _cycle(db, p.cycle_id)
    raw = {"begin": p.model_dump(mode="json", exclude_none=True)}
    if row is None:
        row = Cycle(cycle_id=p.cycle_id, driver=p.driver, started_at=p.started_at or now, updated_at=now)
        for k in ("host", "pid", "candidates_count", "claims_count", "swept_count", "session_id"):
            setattr(row, k, getattr(p, k))
        row.raw = raw
        db.add(row)
        db.flush()
        cycles_changed(db, [(row.cycle_id, row.session_id)])  # the driver of sessions it names
        return row, True
    if row.driver != p.driver:
        raise ConflictError(f"cycle_id {p.cycle_id!r} belongs to driver {row.driver!r}")
    if row.start_synthesised and "begin" not in (row.raw or {}):
        links = (row.started_at, row.session_id)
        start = p.started_at or as_utc(row.started_at)
        if row.ended_at is None or start <= as_utc(row.ended_at):
            row.started_at, row.start_synthesised = start, False
        for k in ("host", "pid", "candidates_count", "claims_count", "swept_count", "session_id"):
            if getattr(row, k) is None:
                setattr(row, k, getattr(p, k))
        row.raw = {**(row.raw or {}), **raw}
        row.updated_at = now
        db.add(row)
        if (row.started_at, row.session_id) != links:  # which cycle is a session's newest
            db.flush()
            cycles_changed(db, [(row.cycle_id, row.session_id)])
    return row, False


def finish_cycle(db: Session, p: CycleFinish, now: datetime, *, redactor: Redactor) -> tuple[Cycle, bool]:
    """Close a cycle; (row, changed). A finish for an unknown cycle synthesises its start."""
    p = redact_model(redactor, p, Cycle)
    lock_key(db, "cycle", p.cycle_id)
    row = _cycle(db, p.cycle_id)
    ended = p.ended_at or now
    raw = {"finish": p.model_dump(mode="json", exclude_none=True)}
    linked = row.session_id if row is not None else ""  # "": the cycle is new
    if row is None:
        start = p.started_at
        if start is None and p.worker_wallclock_seconds is not None:
            start = ended - timedelta(seconds=p.worker_wallclock_seconds)
        row = Cycle(
            cycle_id=p.cycle_id,
            driver=p.driver,
            started_at=start or ended,
            start_synthesised=True,
            updated_at=now,
            raw={},
        )
        observed = p.started_at is not None or p.worker_wallclock_seconds is not None
    else:
        if row.driver != p.driver:
            raise ConflictError(f"cycle_id {p.cycle_id!r} belongs to driver {row.driver!r}")
        if row.ended_at is not None:
            return row, False  # a retried finish
        if ended < as_utc(row.started_at) and not row.start_synthesised:
            raise ConflictError(
                f"ended_at {ended.isoformat()} is before cycle {p.cycle_id!r} started "
                f"({as_utc(row.started_at).isoformat()})"
            )
        observed = True
    row.ended_at = ended
    row.terminal_state, row.worker_outcome, row.error_kind = (
        p.terminal_state,
        p.worker_outcome,
        p.error_kind,
    )
    row.worker_wallclock_seconds = p.worker_wallclock_seconds
    row.session_id = p.session_id or row.session_id
    for k in _COUNTS:
        if getattr(p, k) is not None:
            setattr(row, k, getattr(p, k))
    row.raw = {**(row.raw or {}), **raw}
    row.updated_at = now
    db.add(row)
    db.flush()
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
        for kind, col in (
            ("input", "input_tokens"),
            ("output", "output_tokens"),
            ("cache_read", "cache_read_tokens"),
            ("cache_write", "cache_creation_tokens"),
        ):
            aggregates.bump(db, "agent_run_tokens_total", {**labels, "kind": kind}, cols[col])
    db.flush()
    return row, True
