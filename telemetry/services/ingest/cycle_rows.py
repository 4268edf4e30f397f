"""The `cycle` table read and written as plain rows, for ingestion.

A begin or a finish is the hottest write octel has: the ORM's unit of work (an object built,
its attributes tracked, a flush planned) cost more CPU than the statements themselves. Here a
new cycle is one `INSERT … ON CONFLICT DO NOTHING RETURNING`, an existing one a `SELECT` and
an `UPDATE` of the columns that changed. Each engine has one `CycleRows`, chosen once per
dialect (`rows_for`): on SQLite the statements are built with SQLAlchemy Core and cached
compiled (`cycle_rows_core`), on PostgreSQL fixed SQL text is sent by psycopg itself
(`cycle_rows_pg`). A row is a frozen `CycleRow` (`telemetry.store.cycle_row`) with the table's
columns as fields, what `cycle_dict` reads; a change gives a new row.

A transaction that writes many cycles at once (`group_commit`) reads the stored rows of the
cycles it will finish in one statement (`prefetch`), once it holds their advisory locks: no
other writer can change them until it commits, and what it writes itself is kept in step, so
`read` answers from them as the table would. On PostgreSQL such a transaction may also hold
its writes back (`deferred`): the cycles it knows are not stored, and the rows it changes, are
written when the block ends, the inserts together and the updates together, one round trip
each instead of one a cycle.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from sqlalchemy.engine import Connection
from sqlmodel import Session

from telemetry.services.ingest.cycle_rows_core import CoreCycleRows
from telemetry.services.ingest.cycle_rows_pg import PgCycleRows
from telemetry.store.cycle_row import CycleRow, CycleValues
from telemetry.store.held import hold
from telemetry.store.models import Cycle

__all__ = [
    "COLUMNS",
    "CycleRow",
    "CycleRows",
    "StoredMeanwhile",
    "deferred",
    "insert_new",
    "prefetch",
    "read",
    "rows_for",
    "update_row",
]

COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(CycleRow))
_NEW = COLUMNS[1:]  # all but the id
_KNOWN = "octel_cycle_rows"  # Session.info: cycle id → its row (None: not stored), prefetched
_HELD_BACK = "octel_cycle_writes"  # Session.info: the writes a `deferred` block holds back


class CycleRows(Protocol):
    """The cycle table's rows on one engine: the statements ingestion sends, on the
    transaction's connection."""

    @property
    def holds_back(self) -> bool:
        """Whether a `deferred` block holds its writes back (each statement a round trip)."""
        ...

    def read(self, conn: Connection, cycle_id: str) -> CycleRow | None:
        """The stored cycle, or None."""
        ...

    def read_many(self, conn: Connection, cycle_ids: list[str]) -> list[CycleRow]:
        """The stored ones of these cycles, in one statement."""
        ...

    def insert_new(self, conn: Connection, values: Mapping[str, Any]) -> CycleRow | None:
        """Insert a cycle unless its id is stored already; the new row, or None when it was."""
        ...

    def update_row(self, conn: Connection, row_id: int, changed: Mapping[str, Any]) -> None:
        """Write the `changed` columns of the row `row_id`."""
        ...

    def insert_all(self, conn: Connection, rows: Sequence[CycleRow]) -> int:
        """Insert new cycles together; how many were (one stored already is not)."""
        ...

    def update_all(
        self, conn: Connection, keys: tuple[str, ...], changes: Sequence[tuple[int, Mapping[str, Any]]]
    ) -> None:
        """Write the `keys` columns of several rows (row id, values) together."""
        ...


@functools.cache
def rows_for(dialect: str) -> CycleRows:
    """The `CycleRows` of an engine of this dialect (the one choice between engines)."""
    return PgCycleRows() if dialect == "postgresql" else CoreCycleRows(dialect)


def _rows(conn: Connection) -> CycleRows:
    return rows_for(conn.dialect.name)


class StoredMeanwhile(RuntimeError):
    """A cycle held back as new was found stored when written (by a writer that took no lock
    on it): the transaction's writes are wrong, so it must be rolled back."""


class _HeldBack:
    """A `deferred` block's writes: new rows by cycle id, changed columns by row id."""

    def __init__(self) -> None:
        self.inserts: dict[str, CycleRow] = {}
        self.updates: dict[int, CycleValues] = {}


@contextmanager
def deferred(db: Session) -> Iterator[None]:
    """On PostgreSQL, inside the block, a new cycle `prefetch` found not stored, and a change
    of a row, are written when the block ends, still in the same transaction: the inserts in
    one round trip, the updates in another. `read` answers from the prefetched rows, kept in
    step, and nothing else reads the cycle table before the block ends (a batch relinks its
    sessions after it). Nothing is written when the block raises; an insert that meets a
    stored row raises `StoredMeanwhile`. Elsewhere, and on SQLite (in process: no round trips
    to save), writes go out as they come."""
    if not rows_for(db.get_bind().dialect.name).holds_back:
        yield
        return
    with hold(db, _HELD_BACK, _HeldBack, _write_held):
        yield


def _write_held(db: Session, held: _HeldBack) -> None:
    conn = db.connection()
    rows = _rows(conn)
    if held.inserts:
        new = list(held.inserts.values())
        if rows.insert_all(conn, new) != len(new):
            raise StoredMeanwhile("a cycle written as new was stored meanwhile")
    by_columns: dict[tuple[str, ...], list[tuple[int, Mapping[str, Any]]]] = {}
    for row_id in sorted(held.updates):  # in id order, as a lone writer would meet them
        changed = held.updates[row_id]
        by_columns.setdefault(tuple(sorted(changed)), []).append((row_id, changed))
    for keys, changes in by_columns.items():
        rows.update_all(conn, keys, changes)


def prefetch(db: Session, cycle_ids: Iterable[str]) -> None:
    """Read the stored rows of `cycle_ids` in one statement, for `read` to answer from until
    the transaction ends. Only for cycles whose advisory lock (`cycle:` + id) it holds."""
    ids = sorted(set(cycle_ids))
    if not ids:
        return
    conn = db.connection()
    found = _rows(conn).read_many(conn, ids)
    known: dict[str, CycleRow | None] = db.info.setdefault(_KNOWN, {})
    known.update(dict.fromkeys(ids))
    known.update((r.cycle_id, r) for r in found)


def read(db: Session, cycle_id: str) -> CycleRow | None:
    """The stored cycle, or None."""
    known: dict[str, CycleRow | None] | None = db.info.get(_KNOWN)
    if known is not None and cycle_id in known:
        return known[cycle_id]
    conn = db.connection()
    return _rows(conn).read(conn, cycle_id)


def insert_new(db: Session, values: CycleValues) -> CycleRow | None:
    """Insert a cycle unless its id is stored already; the new row, or None when it was (a
    row held back by `deferred` has no id yet)."""
    held: _HeldBack | None = db.info.get(_HELD_BACK)
    known: dict[str, CycleRow | None] | None = db.info.get(_KNOWN)
    cid = values["cycle_id"]
    if held is not None and known is not None and cid in known:  # read under its lock
        if known[cid] is not None:  # stored, or held back as new: as the table would answer
            return None
        new_row: list[Any] = [values.get(c) for c in _NEW]
        held.inserts[cid] = known[cid] = CycleRow(None, *new_row)
        return held.inserts[cid]
    conn = db.connection()
    new = _rows(conn).insert_new(conn, values)
    _remember(db, cid, new)
    if new is None:
        return None
    assert new.id is not None  # sent: the table gave it its id
    _forget(db, new.id)
    return new


def update_row(db: Session, row: CycleRow, changed: CycleValues) -> CycleRow:
    """Write `changed` columns of a stored row; the row as it is now (a new `CycleRow`)."""
    held: _HeldBack | None = db.info.get(_HELD_BACK)
    now = dataclasses.replace(row, **changed)
    if held is not None and db.info.get(_KNOWN) is not None:  # `read` keeps answering from it
        if row.cycle_id in held.inserts:
            before = held.inserts[row.cycle_id]
            held.inserts[row.cycle_id] = now if before is row else dataclasses.replace(before, **changed)
        else:
            assert row.id is not None  # only a row held back as new has none
            held.updates.setdefault(row.id, {}).update(changed)
    else:
        assert row.id is not None
        conn = db.connection()
        _rows(conn).update_row(conn, row.id, changed)
    if row.id is not None:
        _forget(db, row.id)
    _remember(db, row.cycle_id, now)
    return now


def _remember(db: Session, cycle_id: str, row: CycleRow | None) -> None:
    """Keep a prefetched row in step with what this transaction wrote (an insert that met a
    stored row forgets it: `read` then asks the table)."""
    known: dict[str, CycleRow | None] | None = db.info.get(_KNOWN)
    if known is None:
        return
    if row is None:
        known.pop(cycle_id, None)
    else:
        known[cycle_id] = row


def _forget(db: Session, row_id: int) -> None:
    """A `Cycle` object this session loaded before no longer says what is stored: expire it,
    so the ORM reads the row again if anyone asks."""
    obj = db.identity_map.get(Session.identity_key(Cycle, row_id))
    if obj is not None:
        db.expire(obj)
