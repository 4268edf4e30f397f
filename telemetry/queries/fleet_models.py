"""The typed answers about the fleet: cycles, their summary, daemon health, costs, runs, `why`.

Shared by the web API (`response_model`) and the CLI's `--json`, like `telemetry.queries.models`.
Cost rows carry only the group keys asked for: they are validated from the query's rows and
dumped with `exclude_unset`, so a key that was not grouped on is absent rather than null.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from telemetry.queries.live import LiveSessionOut
from telemetry.queries.models import SessionRecord, Tokens

__all__ = [
    "CostBreakdown",
    "CostRow",
    "CostTotals",
    "CostsAnswer",
    "CyclePage",
    "CycleRecord",
    "CyclesSummary",
    "DaemonRecord",
    "DriverSummary",
    "FlightCycle",
    "Health",
    "RunAdded",
    "RunPage",
    "RunRecord",
    "TopTree",
    "WhyAnswer",
    "WhyEvidence",
]


class CycleRecord(BaseModel):
    cycle_id: str
    driver: str
    host: str | None
    pid: int | None
    started_at: str
    ended_at: str | None
    in_flight: bool
    duration_s: float | None
    elapsed_s: float | None
    candidates_count: int | None
    claims_count: int | None
    swept_count: int | None
    processed_count: int | None
    escalated_count: int | None
    terminal_state: str | None
    worker_outcome: str | None
    error_kind: str | None
    session_id: str | None
    worker_wallclock_seconds: float | None
    start_synthesised: bool


class CyclePage(BaseModel):
    items: list[CycleRecord]
    next_cursor: str | None


class DriverSummary(BaseModel):
    driver: str
    total: int
    in_flight: int
    by_state: dict[str, dict[str, int]] = Field(description="terminal state -> worker outcome -> cycles")


class CyclesSummary(BaseModel):
    since: str
    window_hours: float | None = Field(None, description="the window asked for in hours, when asked so")
    drivers: list[DriverSummary]


class FlightCycle(BaseModel):
    """The daemon's cycle in flight (fields null when the daemon names a cycle octel has not seen)."""

    cycle_id: str | None
    started_at: str | None
    session_id: str | None
    candidates_count: int | None
    elapsed_s: float | None


class DaemonRecord(BaseModel):
    driver: str
    host: str
    pid: int | None
    state: Literal["ok", "running_long_worker", "down", "unknown"]
    reason: str
    source: str
    last_heartbeat_at: str
    heartbeat_age_s: float
    in_flight_cycle: FlightCycle | None


class Health(BaseModel):
    status: str
    now: str
    long_worker_seconds: float
    daemons: list[DaemonRecord]


class CostRow(BaseModel):
    """Spend of one group; only the group keys asked for are present."""

    source: str = Field(description="opencode or claude")
    key: str | None = Field(None, description="the value of the breakdown's key (web breakdowns)")
    agent: str | None = None
    model: str | None = None
    driver: str | None = None
    day: str | None = None
    tokens: Tokens
    tokens_total: int
    cost_usd: float
    count: int
    cache_hit_ratio: float | None


class CostTotals(BaseModel):
    tokens: Tokens
    tokens_total: int
    cost_usd: float
    count: int
    cache_hit_ratio: float | None


class TopTree(BaseModel):
    session_id: str
    agent: str | None
    model: str | None
    title: str | None
    label: str | None
    verdict: str
    created_at: str | None
    archived_at: str
    cost_usd: float
    subtree_cost_usd: float
    subtree_tokens: int
    subtree_session_count: int


class CostBreakdown(BaseModel):
    """`octel costs`: rows grouped by `by`, totals, and (with `--top`) the most expensive."""

    by: list[str]
    since: str | None
    until: str | None
    rows: list[CostRow]
    totals: CostTotals
    top_sessions: list[SessionRecord] | None = None
    top_trees: list[TopTree] | None = None


class CostsAnswer(BaseModel):
    """`/api/costs`: one breakdown per key asked for, totals and the most expensive."""

    since: str
    until: str
    totals: CostTotals
    breakdowns: dict[str, list[CostRow]]
    top_sessions: list[SessionRecord]
    top_trees: list[TopTree]


class RunRecord(BaseModel):
    run_key: str
    task: str | None
    agent: str | None
    session_id: str | None
    model: str | None
    subtype: str | None
    is_error: bool
    exit_code: int | None
    num_turns: int | None
    duration_ms: int | None
    duration_api_ms: int | None
    cost_usd: float | None
    tokens: Tokens
    created_at: str


class RunPage(BaseModel):
    items: list[RunRecord]
    next_cursor: str | None


class RunAdded(BaseModel):
    created: bool
    run: RunRecord


class WhyEvidence(BaseModel):
    source: str = Field(description="finding, cycle, index or archive")
    detail: str


class WhyAnswer(BaseModel):
    """Why a session or cycle stopped: one verdict, decisive evidence first."""

    id: str
    kind: Literal["session", "cycle"]
    session_id: str | None
    cycle_id: str | None
    code: str
    verdict: str
    summary: str
    evidence: list[WhyEvidence]
    live: LiveSessionOut | None = None  # the live row, when the session runs now
