"""The store's tables (DESIGN.md "The records").

Timestamps are timezone-aware UTC. Lists are paged on (time, id) and filtered in the database,
so every list the console or CLI shows has an index behind it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    UniqueConstraint,
    false,
    text,
)
from sqlmodel import Field, SQLModel

__all__ = [
    "NAMING",
    "SPEND_READ",
    "TREE_ROOTS",
    "AgentRun",
    "Aggregate",
    "CountedFinding",
    "Cycle",
    "Daemon",
    "Finding",
    "OtlpSeen",
    "SessionIndex",
    "Usage",
]

# A naming convention makes Alembic's constraint names the same on SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata = MetaData(naming_convention=NAMING)

# what the Costs page reads of the rows of a partial day, in the order its index keeps them
SPEND_READ = (
    "created_at",
    "archived_at",
    "source",
    "agent",
    "model",
    "driver",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
    "cost_usd",
)
# the rows `ix_session_index_tree_cost` holds: roots whose tree has an indexed row
TREE_ROOTS = "parent_session_id IS NULL AND tree_session_count > 0"


# Token counts, byte sizes and durations in milliseconds pass 2**31 in a long-lived fleet:
# BIGINT on PostgreSQL (SQLite's INTEGER already holds 64 bits).
BIG = BigInteger().with_variant(Integer(), "sqlite")


def _big(default: int = 0) -> Any:
    return Field(default=default, sa_type=BIG)


class Usage(SQLModel):
    """The usage columns of every table that sums spend (index rows, live rows, the daily
    summary): tokens by kind (`archiver.metrics.TOKEN_KINDS`) and cost."""

    tokens_input: int = _big()
    tokens_output: int = _big()
    tokens_reasoning: int = _big()
    tokens_cache_read: int = _big()
    tokens_cache_write: int = _big()
    cost_usd: float = 0.0


def _counted(default: float, big: bool = False) -> Any:
    if big:
        return Field(default=default, sa_type=BIG, sa_column_kwargs={"server_default": "0"})
    return Field(default=default, sa_column_kwargs={"server_default": "0"})


def _ts(nullable: bool = False, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=nullable, index=index))


def _json() -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=True))


class Cycle(SQLModel, table=True):
    """One dispatcher cycle, written at begin and updated at finish."""

    __tablename__ = "cycle"
    __table_args__ = (
        Index("ix_cycle_driver_started", "driver", "started_at", "id"),
        Index("ix_cycle_started", "started_at", "id"),
        # the cycles in flight alone (a partial index: a few rows however long the history),
        # with what /metrics and the health page read of them, so they never touch the table
        Index(
            "ix_cycle_in_flight",
            "driver",
            "started_at",
            "ended_at",  # always null here, yet SQLite reads the table for it if left out
            postgresql_where=text("ended_at IS NULL"),
            sqlite_where=text("ended_at IS NULL"),
        ),
        # the window's summary by driver and outcome, read from the index alone (0010)
        Index("ix_cycle_started_outcome", "started_at", "driver", "terminal_state", "worker_outcome"),
    )

    id: int | None = Field(default=None, primary_key=True)
    cycle_id: str = Field(max_length=200, unique=True)
    driver: str = Field(max_length=100)
    host: str | None = Field(default=None, max_length=255)
    pid: int | None = None
    started_at: datetime = _ts()
    ended_at: datetime | None = _ts(nullable=True)
    candidates_count: int | None = None
    claims_count: int | None = None
    swept_count: int | None = None
    processed_count: int | None = None
    escalated_count: int | None = None
    terminal_state: str | None = Field(default=None, max_length=100, index=True)
    worker_outcome: str | None = Field(default=None, max_length=100)
    error_kind: str | None = Field(default=None, max_length=200)
    session_id: str | None = Field(default=None, max_length=200, index=True)
    worker_wallclock_seconds: float | None = None
    start_synthesised: bool = False
    raw: dict[str, Any] | None = _json()
    updated_at: datetime = _ts()


class Daemon(SQLModel, table=True):
    """One dispatcher process, known by its heartbeats (HTTP or heartbeat file)."""

    __tablename__ = "daemon"
    __table_args__ = (UniqueConstraint("driver", "host", name="uq_daemon_driver_host"),)

    id: int | None = Field(default=None, primary_key=True)
    driver: str = Field(max_length=100, index=True)
    host: str = Field(max_length=255)
    pid: int | None = None
    last_heartbeat_at: datetime = _ts()
    in_flight_cycle_id: str | None = Field(default=None, max_length=200)
    source: str = Field(default="http", max_length=20)
    first_seen_at: datetime = _ts()


class SessionIndex(Usage, table=True):
    """One archived OpenCode or Claude Code session: what the console and CLI list, without
    scanning folders."""

    __tablename__ = "session_index"
    __table_args__ = (
        Index("ix_session_index_archived", "archived_at", "id"),
        Index("ix_session_index_agent_archived", "agent", "archived_at", "id"),
        Index("ix_session_index_model_archived", "model", "archived_at", "id"),
        Index("ix_session_index_verdict_archived", "verdict", "archived_at", "id"),
        Index("ix_session_index_label_archived", "label", "archived_at", "id"),
        Index("ix_session_index_source_archived", "source", "archived_at", "id"),
        # the part of a Costs window that is not whole days, by creation time, with all the
        # page reads of each row so the read never leaves the index (0012, covering 0015)
        Index("ix_session_index_created_spend", *SPEND_READ),
        # the most expensive sessions of a window: read from the dearest down (0012)
        Index("ix_session_index_cost", "cost_usd", "id"),
        # the dearest trees of a window, read from the dearest down with their times (0015)
        Index(
            "ix_session_index_tree_cost",
            "tree_cost_usd",
            "id",
            "created_at",
            "archived_at",
            postgresql_where=text(TREE_ROOTS),
            sqlite_where=text(TREE_ROOTS),
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=200, unique=True)
    root_session_id: str = Field(max_length=200, index=True)
    parent_session_id: str | None = Field(default=None, max_length=200, index=True)
    depth: int = 0
    label: str | None = Field(default=None, max_length=200)
    cycle_id: str | None = Field(default=None, max_length=200, index=True)
    # the driver of its cycle (telemetry.store.spend.driver_of), kept as cycles arrive (0012)
    driver: str | None = Field(default=None, max_length=100)
    agent: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    title: str | None = Field(default=None, max_length=1000)
    directory: str | None = Field(default=None, max_length=1000)
    opencode_version: str | None = Field(default=None, max_length=50)
    # which agent wrote it: opencode or claude_code
    source: str = Field(default="opencode", max_length=20, sa_column_kwargs={"server_default": "opencode"})
    # a Claude Code root: the cost its CLI reported, whether octel's figure differs, unknown models
    reported_cost_usd: float | None = None
    cost_mismatch: bool = Field(default=False, sa_column_kwargs={"server_default": false()})
    unpriced_models: str | None = Field(default=None, max_length=500)
    created_at: datetime | None = _ts(nullable=True)
    updated_at: datetime | None = _ts(nullable=True)
    archived_at: datetime = _ts()
    duration_s: float | None = None
    turn_count: int = 0
    message_count: int = 0
    in_flight: bool = False
    subtree_tokens: int = _big()
    subtree_cost_usd: float = 0.0
    subtree_session_count: int = 1
    # the indexed tree: sums over the rows naming this one as their root
    # (telemetry.store.tree_rollup), kept by every write of the tree (0015)
    tree_cost_usd: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    tree_tokens: int = _counted(0, big=True)
    tree_session_count: int = Field(default=0, sa_column_kwargs={"server_default": "0"})
    verdict: str = Field(default="healthy", max_length=20)
    worst_detector: str | None = Field(default=None, max_length=100)
    finding_count: int = 0
    walk_error_count: int = 0
    error_kind: str | None = Field(default=None, max_length=200)
    archive_path: str = Field(max_length=1000)
    schema_version: int = 2
    content_hash: str = Field(max_length=128)
    # the highest usage of this session ever added to the counters (never lowered)
    counted_tokens_input: int = _counted(0, big=True)
    counted_tokens_output: int = _counted(0, big=True)
    counted_tokens_reasoning: int = _counted(0, big=True)
    counted_tokens_cache_read: int = _counted(0, big=True)
    counted_tokens_cache_write: int = _counted(0, big=True)
    counted_cost_usd: float = _counted(0.0)


class CountedFinding(SQLModel, table=True):
    """A (session, source, detector, verdict) already counted in ``findings_total``: kept when
    the finding itself goes away, so a finding that comes back is not counted again."""

    __tablename__ = "counted_finding"
    __table_args__ = (
        UniqueConstraint(
            "session_id", "source", "detector", "verdict", name="uq_counted_finding_session_verdict"
        ),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=200)
    source: str = Field(max_length=20)
    detector: str = Field(max_length=100)
    verdict: str = Field(max_length=20)


class Finding(SQLModel, table=True):
    """A detector's finding on a session, from an archive or a live probe."""

    __tablename__ = "finding"
    __table_args__ = (
        UniqueConstraint("session_id", "detector", "source", name="uq_finding_session_detector"),
        Index("ix_finding_detected", "detected_at", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=200, index=True)
    detector: str = Field(max_length=100)
    verdict: str = Field(max_length=20, index=True)
    score: float = 0.0
    start_index: int = 0
    evidence: dict[str, Any] | None = _json()
    source: str = Field(default="archive", max_length=20)
    detected_at: datetime = _ts()


class AgentRun(SQLModel, table=True):
    """One Claude Code CLI run, from its `--output-format json` result."""

    __tablename__ = "agent_run"
    __table_args__ = (Index("ix_agent_run_created", "created_at", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    run_key: str = Field(max_length=200, unique=True)
    task: str | None = Field(default=None, max_length=500, index=True)
    agent: str | None = Field(default=None, max_length=100, index=True)
    session_id: str | None = Field(default=None, max_length=200)
    model: str | None = Field(default=None, max_length=200)
    subtype: str | None = Field(default=None, max_length=100)
    is_error: bool = False
    exit_code: int | None = None
    num_turns: int | None = None
    duration_ms: int | None = Field(default=None, sa_type=BIG)
    duration_api_ms: int | None = Field(default=None, sa_type=BIG)
    cost_usd: float = 0.0
    input_tokens: int = _big()
    output_tokens: int = _big()
    cache_read_tokens: int = _big()
    cache_creation_tokens: int = _big()
    model_usage: dict[str, Any] | None = _json()
    raw: dict[str, Any] | None = _json()
    created_at: datetime = _ts()


class OtlpSeen(SQLModel, table=True):
    """An observation of Claude Code's own telemetry already folded into its run (`otel:` key).

    A retried export finds its observations here and changes nothing. A row per observation,
    not a list in the run's JSON: that list was rewritten (and redacted again) whole with every
    export, so a long session cost more with each batch. `digest` is a 128-bit hash of the
    observation's (redacted) key, which may be kilobytes long.
    """

    __tablename__ = "otlp_seen"

    run_key: str = Field(max_length=200, primary_key=True)
    digest: str = Field(max_length=32, primary_key=True)


class Aggregate(SQLModel, table=True):
    """A monotonic counter that `/metrics` exposes, kept at write time.

    Scrapes read these few rows instead of scanning history, and pruning old rows never lowers
    a counter. `labels` is the canonical JSON of the label set.
    """

    __tablename__ = "aggregate"
    __table_args__ = (UniqueConstraint("metric", "labels", name="uq_aggregate_metric_labels"),)

    id: int | None = Field(default=None, primary_key=True)
    metric: str = Field(max_length=100)
    labels: str = Field(max_length=1000)
    value: float = 0.0
    updated_at: datetime = _ts()
