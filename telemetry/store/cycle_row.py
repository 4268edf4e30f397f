"""A stored cycle as a plain, frozen row: the `cycle` table's columns and nothing else.

Ingestion reads and writes the `cycle` table with SQL of its own (`services.ingest.cycle_rows`), not
through the ORM; what it reads back, and answers with, is a `CycleRow`. Its fields are the
table's columns in the table's order (a test holds them equal), so a row comes straight from a
result's tuple, and a column added to `Cycle` cannot be forgotten here. A change is a new row
(`dataclasses.replace`): a row handed out stays what it was when read. What ingestion writes
is `CycleValues`: the same columns (but the id) by name, only those it sets.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from archiver.shape import RawJson

__all__ = ["CycleRow", "CycleValues"]


@dataclass(frozen=True, slots=True)
class CycleRow:
    """One row of the `cycle` table (`store.models.Cycle`); `id` is None for a row written
    but not yet sent (held back until its transaction's block ends)."""

    id: int | None
    cycle_id: str
    driver: str
    host: str | None
    pid: int | None
    started_at: datetime
    ended_at: datetime | None
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
    raw: RawJson | None
    updated_at: datetime


class CycleValues(TypedDict, total=False):
    """Columns of a `CycleRow` by name, as an insert or an update writes them: a column left
    out is null in a new row and unchanged in a stored one (a test holds them to the row's)."""

    cycle_id: str
    driver: str
    host: str | None
    pid: int | None
    started_at: datetime
    ended_at: datetime | None
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
    raw: RawJson | None
    updated_at: datetime
