"""The lost-tree table: a session tree octel could not archive in full, and why.

The watcher writes a row when a tree deleted on the server before it could be read there was
archived from its mirror with something missing, or could not be archived at all; a counter
(`octel_trees_lost_total`) is bumped in the same transaction. Nothing is ever lost silently.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index
from sqlmodel import Field, SQLModel

from telemetry.store.columns import json_column, timestamp

__all__ = ["LOST_REASONS", "LostTree"]

# incomplete: archived from the mirror, which lacked something, or before its last turns (said
# in `missing`); not_written: the archive could not be written or indexed; unseen: deleted
# before any of its events reached the watcher, so there was nothing to archive.
LOST_REASONS = ("incomplete", "not_written", "unseen")


class LostTree(SQLModel, table=True):
    """One tree (or deleted subtree) octel could not archive in full."""

    __tablename__ = "lost_tree"
    __table_args__ = (
        Index("ix_lost_tree_detected", "detected_at", "id"),
        Index("ix_lost_tree_root", "root_session_id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(max_length=500)
    root_session_id: str = Field(max_length=200)
    top_session_id: str = Field(max_length=200)  # the deleted session the subtree hangs from
    reason: str = Field(max_length=30)
    origin: str = Field(max_length=20)  # where what was kept came from: mirror, server, none
    sessions: int = 0
    messages: int = 0
    archived: bool = False  # an archive (partial) was written and indexed
    missing: list[dict[str, Any]] | None = json_column()  # what was lost, in walk-error form
    detected_at: datetime = timestamp()
