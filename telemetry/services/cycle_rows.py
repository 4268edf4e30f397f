"""The `cycle` table read and written as plain rows (SQLAlchemy Core), for ingestion.

A begin or a finish is the hottest write octel has: the ORM's unit of work (an object built,
its attributes tracked, a flush planned) cost more CPU than the statements themselves. Here a
new cycle is one `INSERT … ON CONFLICT DO NOTHING RETURNING`, an existing one a `SELECT` and
an `UPDATE` of the columns that changed; every statement is built once and cached compiled
(on PostgreSQL, fixed SQL text sent by psycopg itself: `cycle_rows_pg`).
A row is a `SimpleNamespace` with the table's columns as attributes, what `cycle_dict` reads.

A transaction that writes many cycles at once (`group_commit`) reads the stored rows of the
cycles it will finish in one statement (`prefetch`), once it holds their advisory locks: no
other writer can change them until it commits, and what it writes itself is kept in step, so
`read` answers from them as the table would. On PostgreSQL such a transaction may also hold
its writes back (`deferred`): the cycles it knows are not stored, and the rows it changes, are
written when the block ends, the inserts together and the updates together, one round trip
each instead of one a cycle.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from telemetry.services import cycle_rows_pg
from telemetry.store.held import hold
from telemetry.store.models import Cycle

__all__ = ["COLUMNS", "StoredMeanwhile", "deferred", "insert_new", "prefetch", "read", "update_row"]

_T = Cycle.__table__  # type: ignore[attr-defined]
COLUMNS: tuple[str, ...] = tuple(c.name for c in _T.columns)
_NEW = tuple(c for c in COLUMNS if c != "id")
_KNOWN = "octel_cycle_rows"  # Session.info: cycle id → its row (None: not stored), prefetched
_HELD_BACK = "octel_cycle_writes"  # Session.info: the writes a `deferred` block holds back


class StoredMeanwhile(RuntimeError):
    """A cycle held back as new was found stored when written (by a writer that took no lock
    on it): the transaction's writes are wrong, so it must be rolled back."""


class _HeldBack:
    """A `deferred` block's writes: new rows by cycle id, changed columns by row id."""

    def __init__(self) -> None:
        self.inserts: dict[str, dict[str, Any]] = {}
        self.updates: dict[int, dict[str, Any]] = {}


@contextmanager
def deferred(db: Session) -> Iterator[None]:
    """On PostgreSQL, inside the block, a new cycle `prefetch` found not stored, and a change
    of a row, are written when the block ends, still in the same transaction: the inserts in
    one round trip, the updates in another. `read` answers from the prefetched rows, kept in
    step, and nothing else reads the cycle table before the block ends (a batch relinks its
    sessions after it). Nothing is written when the block raises; an insert that meets a
    stored row raises `StoredMeanwhile`. Elsewhere, and on SQLite (in process: no round trips
    to save), writes go out as they come."""
    if db.get_bind().dialect.name != "postgresql":
        yield
        return
    with hold(db, _HELD_BACK, _HeldBack, _write_held):
        yield


def _write_held(db: Session, held: _HeldBack) -> None:
    conn = db.connection()
    if held.inserts:
        rows = list(held.inserts.values())
        if cycle_rows_pg.insert_all(conn, rows) != len(rows):
            raise StoredMeanwhile("a cycle written as new was stored meanwhile")
    by_columns: dict[tuple[str, ...], list[tuple[int, dict[str, Any]]]] = {}
    for row_id in sorted(held.updates):  # in id order, as a lone writer would meet them
        changed = held.updates[row_id]
        by_columns.setdefault(tuple(sorted(changed)), []).append((row_id, changed))
    for keys, changes in by_columns.items():
        cycle_rows_pg.update_all(conn, keys, changes)


@functools.cache
def _read() -> Any:
    return select(*_T.columns).where(_T.c.cycle_id == bindparam("cid"))


@functools.cache
def _read_many() -> Any:
    return select(*_T.columns).where(_T.c.cycle_id.in_(bindparam("cids", expanding=True)))


@functools.cache
def _insert(dialect: str) -> Any:
    if dialect in ("postgresql", "sqlite"):
        ins = postgresql.insert(_T) if dialect == "postgresql" else sqlite.insert(_T)
        return ins.on_conflict_do_nothing(index_elements=["cycle_id"]).returning(*_T.columns)
    return insert(_T).returning(*_T.columns)


def prefetch(db: Session, cycle_ids: Iterable[str]) -> None:
    """Read the stored rows of `cycle_ids` in one statement, for `read` to answer from until
    the transaction ends. Only for cycles whose advisory lock (`cycle:` + id) it holds."""
    ids = sorted(set(cycle_ids))
    if not ids:
        return
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        rows = cycle_rows_pg.read_many(conn, ids)
    else:
        rows = [dict(r._mapping) for r in conn.execute(_read_many(), {"cids": ids})]
    known: dict[str, dict[str, Any] | None] = db.info.setdefault(_KNOWN, {})
    known.update(dict.fromkeys(ids))
    known.update((r["cycle_id"], r) for r in rows)


def read(db: Session, cycle_id: str) -> SimpleNamespace | None:
    """The stored cycle, or None."""
    known: dict[str, dict[str, Any] | None] | None = db.info.get(_KNOWN)
    if known is not None and cycle_id in known:
        found = known[cycle_id]
    else:
        conn = db.connection()
        if conn.dialect.name == "postgresql":
            found = cycle_rows_pg.read(conn, cycle_id)
        else:
            row = conn.execute(_read(), {"cid": cycle_id}).first()
            found = dict(row._mapping) if row is not None else None
    return SimpleNamespace(**found) if found is not None else None


def insert_new(db: Session, values: dict[str, Any]) -> SimpleNamespace | None:
    """Insert a cycle unless its id is stored already; the new row, or None when it was (a
    row held back by `deferred` has no id yet)."""
    held: _HeldBack | None = db.info.get(_HELD_BACK)
    known: dict[str, dict[str, Any] | None] | None = db.info.get(_KNOWN)
    cid = values["cycle_id"]
    if held is not None and known is not None and cid in known:  # read under its lock
        if known[cid] is not None:  # stored, or held back as new: as the table would answer
            return None
        new_row = {"id": None, **{c: values.get(c) for c in _NEW}}
        held.inserts[cid] = new_row
        known[cid] = dict(new_row)
        return SimpleNamespace(**new_row)
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        new = cycle_rows_pg.insert_new(conn, values)
    else:
        row = conn.execute(_insert(conn.dialect.name), {c: values.get(c) for c in _NEW}).first()
        new = dict(row._mapping) if row is not None else None
    _remember(db, values["cycle_id"], new)
    if new is None:
        return None
    _forget(db, new["id"])
    return SimpleNamespace(**new)


@functools.cache
def _update(keys: tuple[str, ...]) -> Any:
    return update(_T).where(_T.c.id == bindparam("row_id")).values({k: bindparam(f"v_{k}") for k in keys})


def update_row(db: Session, row: SimpleNamespace, changed: dict[str, Any]) -> SimpleNamespace:
    """Write `changed` columns of a stored row; the row as it is now."""
    held: _HeldBack | None = db.info.get(_HELD_BACK)
    conn = db.connection()
    if held is not None and db.info.get(_KNOWN) is not None:  # `read` keeps answering from it
        if row.cycle_id in held.inserts:
            held.inserts[row.cycle_id].update(changed)
        else:
            held.updates.setdefault(row.id, {}).update(changed)
    elif conn.dialect.name == "postgresql":
        cycle_rows_pg.update_row(conn, row.id, changed)
    else:
        keys = tuple(sorted(changed))
        conn.execute(_update(keys), {"row_id": row.id, **{f"v_{k}": changed[k] for k in keys}})
    if row.id is not None:
        _forget(db, row.id)
    now = {**vars(row), **changed}
    _remember(db, row.cycle_id, now)
    return SimpleNamespace(**now)


def _remember(db: Session, cycle_id: str, row: dict[str, Any] | None) -> None:
    """Keep a prefetched row in step with what this transaction wrote (an insert that met a
    stored row forgets it: `read` then asks the table)."""
    known: dict[str, dict[str, Any] | None] | None = db.info.get(_KNOWN)
    if known is None:
        return
    if row is None:
        known.pop(cycle_id, None)
    else:
        known[cycle_id] = dict(row)


def _forget(db: Session, row_id: int) -> None:
    """A `Cycle` object this session loaded before no longer says what is stored: expire it,
    so the ORM reads the row again if anyone asks."""
    obj = db.identity_map.get(Session.identity_key(Cycle, row_id))
    if obj is not None:
        db.expire(obj)
