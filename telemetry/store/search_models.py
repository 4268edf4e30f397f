"""The content index: one row per searchable part of an archived session (`archiver.content`).

Written with the session's index row, replaced whole when the session is archived again,
removed with it. The text index over `body` is engine-specific and made by migration 0019 (on
SQLite an FTS5 trigram table, `session_search_parts`, whose text the one writer of new rows puts
in (`content_index._insert`, migration 0026) and a trigger takes out, keeping which rows hold
each run but not where (`detail=none`, migration 0027); on PostgreSQL a pg_trgm
GIN index of `lower(body)`), so it has no model here.

`SearchPending` (migration 0023) names the sessions archived since the catch-up indexer last
ran, whose parts are still to be written (`telemetry/services/index/search_catchup.py`), and
whether their documents are ones octel wrote redacted (migration 0025).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Column, DateTime, Index, Integer, Text, false
from sqlmodel import Field, SQLModel

from telemetry.store.columns import BIG

__all__ = ["SearchPart", "SearchPending"]


class SearchPart(SQLModel, table=True):
    __tablename__ = "search_part"
    __table_args__ = (
        Index("ix_search_part_session", "session_id", "message_index"),
        # and `ix_search_part_live`, a partial index: declared in `telemetry.store.models`
    )

    id: int | None = Field(default=None, sa_type=BIG, primary_key=True)
    session_id: str = Field(max_length=200)
    message_index: int
    part_index: int
    kind: str = Field(max_length=20)
    tool: str | None = Field(default=None, max_length=200)
    at: datetime | None = Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=True))
    body: str = Field(sa_column=Column(Text, nullable=False))
    # the live message (`live_message.id`) the part was read from; None: from the archive
    live_message_id: int | None = Field(default=None, sa_type=BigInteger)


class SearchPending(SQLModel, table=True):
    __tablename__ = "search_pending"

    session_id: str = Field(max_length=200, primary_key=True)
    queued_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    tick: int = Field(default=0, sa_column=Column(Integer, nullable=False, server_default="0"))
    # the document its index row names was written redacted by octel (migration 0025): the
    # catch-up reads it as it is; false (a file imported where it lay): redacted again first
    redacted: bool = Field(default=False, sa_column=Column(Boolean, nullable=False, server_default=false()))
