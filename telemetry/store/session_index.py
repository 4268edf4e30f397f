"""The index of archived sessions: one row per OpenCode or Claude Code session, what the
console and CLI list without scanning folders (DESIGN.md "The records")."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, false
from sqlmodel import Field

from telemetry.store.columns import Usage, big, counted, timestamp

__all__ = ["SPEND_READ", "TREE_ROOTS", "IndexRow", "SessionIndex"]

IndexRow = dict[str, str | int | float | datetime | None]
"""Columns of a `session_index` row by name, as a statement read them (every column is a
scalar: text, a number, a flag or a time)."""

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
# the rows `ix_session_index_tree_cost` (telemetry.store.models) holds: roots whose tree has an
# indexed row
TREE_ROOTS = "parent_session_id IS NULL AND tree_session_count > 0"


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
        # and `ix_session_index_tree_cost`, partial, declared in `telemetry.store.models`
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
    created_at: datetime | None = timestamp(nullable=True)
    updated_at: datetime | None = timestamp(nullable=True)
    archived_at: datetime = timestamp()
    duration_s: float | None = None
    turn_count: int = 0
    message_count: int = 0
    in_flight: bool = False
    subtree_tokens: int = big()
    subtree_cost_usd: float = 0.0
    subtree_session_count: int = 1
    # the indexed tree: sums over the rows naming this one as their root
    # (telemetry.store.tree_rollup), kept by every write of the tree (0015)
    tree_cost_usd: float = Field(default=0.0, sa_column_kwargs={"server_default": "0"})
    tree_tokens: int = counted(0, big=True)
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
    counted_tokens_input: int = counted(0, big=True)
    counted_tokens_output: int = counted(0, big=True)
    counted_tokens_reasoning: int = counted(0, big=True)
    counted_tokens_cache_read: int = counted(0, big=True)
    counted_tokens_cache_write: int = counted(0, big=True)
    counted_cost_usd: float = counted(0.0)
