"""The store's tables (DESIGN.md "The records"), the session index among them
(`telemetry.store.session_index`, defined alone so the session queries build no other table).

Timestamps are timezone-aware UTC. Lists are paged on (time, id) and filtered in the database,
so every list the console or CLI shows has an index behind it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from archiver.shape import RawJson
from telemetry.store.columns import BIG, NAMING, Usage, big, json_column, timestamp
from telemetry.store.search_models import SearchPart  # noqa: F401  (its table, for its partial index)
from telemetry.store.session_index import SPEND_READ, TREE_ROOTS, SessionIndex

__all__ = [
    "BIG",
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


# The dearest trees of a window, read from the dearest down with their times (0015). A partial
# index: declaring its `postgresql_where` loads the PostgreSQL dialect, so it is declared here,
# with the tables the migrations compare (migrations/env.py), and not where the session index is,
# which the session queries import alone.
_TREE_COST = SQLModel.metadata.tables["session_index"].c
Index(
    "ix_session_index_tree_cost",
    _TREE_COST.tree_cost_usd,
    _TREE_COST.id,
    _TREE_COST.created_at,
    _TREE_COST.archived_at,
    postgresql_where=text(TREE_ROOTS),
    sqlite_where=text(TREE_ROOTS),
)
# The parts read from live messages alone (0028): with the archived parts' nulls in it, nearly
# every row, SQLite read the whole index for a session's archived parts (`IS NULL`).
_PART = SQLModel.metadata.tables["search_part"].c
Index(
    "ix_search_part_live",
    _PART.live_message_id,
    postgresql_where=text("live_message_id IS NOT NULL"),
    sqlite_where=text("live_message_id IS NOT NULL"),
)


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
    started_at: datetime = timestamp()
    ended_at: datetime | None = timestamp(nullable=True)
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
    raw: RawJson | None = json_column()
    updated_at: datetime = timestamp()


class Daemon(SQLModel, table=True):
    """One dispatcher process, known by its heartbeats (HTTP or heartbeat file)."""

    __tablename__ = "daemon"
    __table_args__ = (UniqueConstraint("driver", "host", name="uq_daemon_driver_host"),)

    id: int | None = Field(default=None, primary_key=True)
    driver: str = Field(max_length=100, index=True)
    host: str = Field(max_length=255)
    pid: int | None = None
    last_heartbeat_at: datetime = timestamp()
    in_flight_cycle_id: str | None = Field(default=None, max_length=200)
    source: str = Field(default="http", max_length=20)
    first_seen_at: datetime = timestamp()


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
    evidence: dict[str, Any] | None = json_column()
    source: str = Field(default="archive", max_length=20)
    detected_at: datetime = timestamp()


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
    input_tokens: int = big()
    output_tokens: int = big()
    cache_read_tokens: int = big()
    cache_creation_tokens: int = big()
    model_usage: RawJson | None = json_column()
    raw: RawJson | None = json_column()
    created_at: datetime = timestamp()


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
    updated_at: datetime = timestamp()
