"""The live table: what `octel watch` sees every session of every followed server doing now.

One row per (server, session), written by the watcher as states change and deleted when the
watcher forgets the tree (hours after it was archived). Kept apart from `models.py` because it
is the only table whose rows are rewritten every few seconds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from archiver.shape import RawJson
from telemetry.store.columns import Usage, json_column, timestamp

__all__ = ["LiveMessage", "LiveSession"]


class LiveSession(Usage, table=True):
    """One session a watcher follows: its state, since when, usage and live findings so far."""

    __tablename__ = "live_session"
    __table_args__ = (
        UniqueConstraint("server", "session_id", name="uq_live_session_server_session"),
        Index("ix_live_session_state_since", "state", "state_since", "id"),
        Index("ix_live_session_root", "root_session_id"),
        Index("ix_live_session_session", "session_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(max_length=500)
    # which OpenCode the server runs (1 or 2, and its version), as the watcher's probe found it
    generation: int | None = None
    server_version: str | None = Field(default=None, max_length=100)
    session_id: str = Field(max_length=200)
    root_session_id: str | None = Field(default=None, max_length=200)
    parent_session_id: str | None = Field(default=None, max_length=200)
    title: str | None = Field(default=None, max_length=1000)
    agent: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    directory: str | None = Field(default=None, max_length=1000)
    state: str = Field(max_length=30)
    state_since: datetime = timestamp()
    state_reason: str | None = Field(default=None, max_length=1000)
    retry_attempt: int = 0
    retry_next_at: datetime | None = timestamp(nullable=True)
    permission: str | None = Field(default=None, max_length=100)
    permission_patterns: list[str] | None = json_column()
    permission_request_id: str | None = Field(default=None, max_length=200)
    permission_asked_at: datetime | None = timestamp(nullable=True)
    tool: str | None = Field(default=None, max_length=100)
    tool_since: datetime | None = timestamp(nullable=True)
    last_activity_at: datetime | None = timestamp(nullable=True)
    turns: int = 0
    verdict: str = Field(default="healthy", max_length=20)
    worst_detector: str | None = Field(default=None, max_length=100)
    findings: list[dict[str, Any]] | None = json_column()
    cycle_id: str | None = Field(default=None, max_length=200)
    driver: str | None = Field(default=None, max_length=100)
    first_seen_at: datetime = timestamp()
    updated_at: datetime = timestamp()


class LiveMessage(SQLModel, table=True):
    """One message so far of a session a watcher follows, redacted, as the server's export
    gives it (``body``: info and parts, cut to a bound). Written when the message changes (a
    message still being written at most every few seconds); a session keeps its newest 200;
    deleted when its tree is archived or forgotten."""

    __tablename__ = "live_message"
    __table_args__ = (
        UniqueConstraint("server", "session_id", "message_id", name="uq_live_message_server_session_message"),
        Index("ix_live_message_session_position", "session_id", "position"),
    )

    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(max_length=500)
    session_id: str = Field(max_length=200)
    message_id: str = Field(max_length=200)
    position: int = 0
    role: str | None = Field(default=None, max_length=30)
    completed: bool = False
    cut: bool = False
    body: RawJson | None = json_column()
    updated_at: datetime = timestamp()
