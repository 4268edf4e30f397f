"""What octel did to live servers, and which watcher follows which server.

`watch_action` is the audit trail of the opt-in rules of `octel watch`: one row for every
intent, carried out or skipped, with its evidence and the server's answer. The row of an
action sent to a server is written before the request (``sending``) and its outcome after;
its `intent_key` is unique per server, so no intent is recorded, nor sent, twice. `watch_lease` holds
one row per followed server: the watcher that follows it and until when its lease runs.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from telemetry.store.columns import json_column, timestamp

__all__ = ["WatchAction", "WatchLease"]


class WatchAction(SQLModel, table=True):
    """One action of a rule on a live session (or the reason it was not carried out)."""

    __tablename__ = "watch_action"
    __table_args__ = (
        Index("ix_watch_action_at", "at", "id"),
        Index("ix_watch_action_session_at", "session_id", "at", "id"),
        Index("ux_watch_action_server_key", "server", "intent_key", unique=True),
    )

    id: int | None = Field(default=None, primary_key=True)
    at: datetime = timestamp()
    server: str = Field(max_length=500)
    session_id: str = Field(max_length=200)
    root_session_id: str | None = Field(default=None, max_length=200)
    rule: str = Field(max_length=40)
    action: str = Field(max_length=20)  # reject_ask, abort, notify
    outcome: str = Field(max_length=20)  # done, skipped, gone, failed, notified, sending, unknown
    detail: str = Field(max_length=1000)
    evidence: dict[str, Any] | None = json_column()
    answer_status: int | None = None
    answer: str | None = Field(default=None, max_length=1000)
    watcher: str | None = Field(default=None, max_length=200)
    intent_key: str | None = Field(default=None, max_length=300)  # None on rows from before 0024


class WatchLease(SQLModel, table=True):
    """The watcher following a server; another may take over once `expires_at` has passed."""

    __tablename__ = "watch_lease"

    server: str = Field(max_length=500, primary_key=True)
    holder: str = Field(max_length=200)
    acquired_at: datetime = timestamp()
    renewed_at: datetime = timestamp()
    expires_at: datetime = timestamp()
