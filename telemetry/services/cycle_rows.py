"""The `cycle` table read and written as plain rows (SQLAlchemy Core), for ingestion.

A begin or a finish is the hottest write octel has: the ORM's unit of work (an object built,
its attributes tracked, a flush planned) cost more CPU than the statements themselves. Here a
new cycle is one `INSERT … ON CONFLICT DO NOTHING RETURNING`, an existing one a `SELECT` and
an `UPDATE` of the columns that changed; every statement is built once and cached compiled
(on PostgreSQL, fixed SQL text sent by psycopg itself: `cycle_rows_pg`).
A row is a `SimpleNamespace` with the table's columns as attributes, what `cycle_dict` reads.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session

from telemetry.services import cycle_rows_pg
from telemetry.store.models import Cycle

__all__ = ["COLUMNS", "insert_new", "read", "update_row"]

_T = Cycle.__table__  # type: ignore[attr-defined]
COLUMNS: tuple[str, ...] = tuple(c.name for c in _T.columns)
_NEW = tuple(c for c in COLUMNS if c != "id")


@functools.cache
def _read() -> Any:
    return select(*_T.columns).where(_T.c.cycle_id == bindparam("cid"))


@functools.cache
def _insert(dialect: str) -> Any:
    if dialect in ("postgresql", "sqlite"):
        ins = postgresql.insert(_T) if dialect == "postgresql" else sqlite.insert(_T)
        return ins.on_conflict_do_nothing(index_elements=["cycle_id"]).returning(*_T.columns)
    return insert(_T).returning(*_T.columns)


def read(db: Session, cycle_id: str) -> SimpleNamespace | None:
    """The stored cycle, or None."""
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        found = cycle_rows_pg.read(conn, cycle_id)
        return SimpleNamespace(**found) if found is not None else None
    row = conn.execute(_read(), {"cid": cycle_id}).first()
    return SimpleNamespace(**row._mapping) if row is not None else None


def insert_new(db: Session, values: dict[str, Any]) -> SimpleNamespace | None:
    """Insert a cycle unless its id is stored already; the new row, or None when it was."""
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        new = cycle_rows_pg.insert_new(conn, values)
    else:
        row = conn.execute(_insert(conn.dialect.name), {c: values.get(c) for c in _NEW}).first()
        new = dict(row._mapping) if row is not None else None
    if new is None:
        return None
    _forget(db, new["id"])
    return SimpleNamespace(**new)


@functools.cache
def _update(keys: tuple[str, ...]) -> Any:
    return update(_T).where(_T.c.id == bindparam("row_id")).values({k: bindparam(f"v_{k}") for k in keys})


def update_row(db: Session, row: SimpleNamespace, changed: dict[str, Any]) -> SimpleNamespace:
    """Write `changed` columns of a stored row; the row as it is now."""
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        cycle_rows_pg.update_row(conn, row.id, changed)
    else:
        keys = tuple(sorted(changed))
        conn.execute(_update(keys), {"row_id": row.id, **{f"v_{k}": changed[k] for k in keys}})
    _forget(db, row.id)
    return SimpleNamespace(**{**vars(row), **changed})


def _forget(db: Session, row_id: int) -> None:
    """A `Cycle` object this session loaded before no longer says what is stored: expire it,
    so the ORM reads the row again if anyone asks."""
    obj = db.identity_map.get(Session.identity_key(Cycle, row_id))
    if obj is not None:
        db.expire(obj)
