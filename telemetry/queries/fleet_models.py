"""The typed answers about the fleet: cycles, their summary, daemon health, costs, runs (`why`'s
is in `telemetry.queries.why_models`, with the live row it may hold).

Shared by the web API (`response_model`) and the CLI's `--json`, like `telemetry.queries.models`.
Cost rows carry only the group keys asked for: they are validated from the query's rows and
dumped with `exclude_unset`, so a key that was not grouped on is absent rather than null.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from telemetry.queries.session_models import Tokens

__all__ = [
    "CostRow",
    "CostTotals",
    "CostsAnswer",
    "CyclePage",
    "CycleRecord",
    "CyclesSummary",
    "DaemonRecord",
    "DailySeries",
    "DriverSummary",
    "FlightCycle",
    "Health",
    "LiveSpend",
    "LiveSpendRow",
    "RunAdded",
    "RunPage",
    "RunRecord",
    "TopSpend",
    "TopTree",
]


DaemonState = Literal["ok", "running_long_worker", "down", "unknown"]


# The one declaration of a cycle's public fields (no docstring: it would be the API's description).
# `cycles.cycle_dict` gives those a stored cycle has: its columns as they are, its times computed.
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
    session_title: str | None = Field(
        None, description="its session's title (redacted), the archive's or the live one's"
    )
    worker_wallclock_seconds: float | None
    start_synthesised: bool
    orphaned: bool = Field(False, description="still open, but its daemon is down")
    long_running: bool = Field(
        False, description="still open, its daemon's heartbeat stale but its process alive"
    )
    daemon_state: DaemonState | None = Field(
        None, description="the state of its daemon, while the cycle is open and a daemon is known"
    )
    daemon_reason: str | None = Field(None, description="why its daemon is in that state")


class CyclePage(BaseModel):
    items: list[CycleRecord]
    next_cursor: str | None


class DriverSummary(BaseModel):
    driver: str
    total: int
    in_flight: int = Field(description="open cycles whose daemon is not down")
    orphaned: int = Field(0, description="open cycles whose daemon is down")
    long_running: int = Field(0, description="of in_flight, those of a long-running worker")
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
    orphaned: bool = Field(False, description="its daemon is down: the cycle will never finish")


class DaemonRecord(BaseModel):
    """A daemon, or a driver known only from a cycle it began (`source: cycle`, never beat)."""

    driver: str
    host: str
    pid: int | None
    state: DaemonState
    reason: str
    source: str = Field(description="http, file, or cycle (no heartbeat ever)")
    liveness: Literal["alive", "dead", "unknown"] = Field(description="its process, when on this host")
    last_heartbeat_at: str | None
    heartbeat_age_s: float | None
    in_flight_cycle: FlightCycle | None


class OpenCyclesLeftOut(BaseModel):
    driver: str
    cycles: int = Field(description="open cycles of the driver not listed in `daemons`")
    in_flight: int
    orphaned: int
    cycles_url: str = Field(description="the cycles list of those cycles")


class Health(BaseModel):
    status: DaemonState = Field(description="the worst state of any daemon (ok when none)")
    now: str
    long_worker_seconds: float
    counts: dict[str, int] = Field(description="daemons in each state")
    cycles_in_flight: int = Field(description="open cycles whose daemon is not down")
    cycles_orphaned: int = Field(description="open cycles whose daemon is down")
    daemons: list[DaemonRecord] = Field(
        description="every daemon; of drivers known only from open cycles, the newest few per driver"
    )
    more_open_cycles: list[OpenCyclesLeftOut] = Field(
        description="per driver, the open cycles with no heartbeat left out of `daemons`"
    )


class CostRow(BaseModel):
    """Spend of one group; only the group keys asked for are present. A web breakdown row is one
    per `key`, its per-source rows in `sources`."""

    source: str | None = Field(None, description="opencode or claude (absent on a merged row)")
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
    sources: list[CostRow] | None = Field(None, description="the row's spend by source")


class CostTotals(BaseModel):
    tokens: Tokens
    tokens_total: int
    cost_usd: float
    count: int
    cache_hit_ratio: float | None


class TopSpend(BaseModel):
    """One of the most expensive sessions or Claude CLI runs. A session carries its index
    record's fields too; a run its `run_key`, its task as `title`, and `session_id` when its
    conversation was archived."""

    model_config = ConfigDict(extra="allow")

    source: Literal["opencode", "claude_code", "claude"] = Field(
        description="a session: who wrote it (opencode, claude_code); claude: a Claude CLI run"
    )
    session_id: str | None
    run_key: str | None = None
    agent: str | None
    model: str | None
    title: str | None
    label: str | None
    verdict: str | None
    created_at: str | None
    cost_usd: float
    subtree_cost_usd: float
    subtree_session_count: int


class TopTree(TopSpend):
    """A root session by the cost of its whole tree, or a Claude CLI run (a tree of one)."""

    archived_at: str | None = None
    subtree_tokens: int | None = None


class DailySeries(BaseModel):
    """Spend per day, stacked: per stack key its cost on each of `days`."""

    class Stack(BaseModel):
        key: str | None
        cost_usd: list[float]

    stack: Literal["agent", "model"]
    days: list[str]
    series: list[Stack]
    day_totals: list[float]


class LiveSpendRow(BaseModel):
    session_id: str
    title: str | None
    agent: str | None
    model: str | None
    state: str
    cost_usd: float = Field(description="spent so far and not in any archive yet")
    archived: bool = Field(description="an earlier archive holds the rest of its spend")


class LiveSpend(BaseModel):
    """Spend of live sessions not counted in the archived spend, most expensive first."""

    cost_usd: float
    count: int = Field(description="live sessions with spend not archived yet")
    sessions: list[LiveSpendRow]


class CostsAnswer(BaseModel):
    """`/api/costs` and `octel costs --json` (`telemetry.queries.costs_answer`): one breakdown
    per key asked for, totals, the daily series and the most expensive."""

    since: str | None = Field(description="the window's start (null: from the first spend)")
    until: str
    totals: CostTotals
    breakdowns: dict[str, list[CostRow]]
    daily: DailySeries
    top_sessions: list[TopSpend]
    top_trees: list[TopTree]
    live: LiveSpend | None = Field(
        None, description="spend so far of sessions running now, not in any archive yet (not in totals)"
    )


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
    archive: dict[str, Any] | None = Field(
        None, description="the run's conversation as archived (the archive outcome), when it was"
    )
