"""The `cycle` table's three ingestion statements on PostgreSQL, sent by psycopg itself
(`telemetry.store.pg_direct`); `cycle_rows` builds them with SQLAlchemy Core elsewhere.

The values are what SQLAlchemy would send (a JSON column's value wrapped as psycopg `Json`,
as its psycopg dialect does) and the rows what it would return.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy.engine import Connection

from telemetry.store import pg_direct
from telemetry.store.models import Cycle

__all__ = ["insert_all", "insert_new", "read", "read_many", "update_all", "update_row"]

_T = Cycle.__table__  # type: ignore[attr-defined]
_COLUMNS: tuple[str, ...] = tuple(c.name for c in _T.columns)
_NEW = tuple(c for c in _COLUMNS if c != "id")
_JSON = frozenset(c.name for c in _T.columns if c.type.__class__.__name__ == "JSON")
_ALL = ", ".join(_COLUMNS)
_READ = f"SELECT {_ALL} FROM cycle WHERE cycle_id = %s"
_READ_MANY = f"SELECT {_ALL} FROM cycle WHERE cycle_id = ANY(%s)"
# a new row is what was sent and its id (no defaults or triggers on the table): only the id
# comes back, not every column to be read again
_INSERT = (
    f"INSERT INTO cycle ({', '.join(_NEW)}) VALUES ({', '.join(['%s'] * len(_NEW))}) "
    "ON CONFLICT (cycle_id) DO NOTHING RETURNING id"
)


@functools.cache
def _update(keys: tuple[str, ...]) -> str:
    return f"UPDATE cycle SET {', '.join(f'{k} = %s' for k in keys)} WHERE id = %s"


def _value(column: str, v: Any) -> Any:
    if column in _JSON and v is not None:
        from psycopg.types.json import Json

        return Json(v)
    return v


def _run(conn: Connection, sql: str, params: list[Any], rows: bool) -> list[dict[str, Any]]:
    return [dict(zip(_COLUMNS, r, strict=True)) for r in pg_direct.execute(conn, sql, params, rows=rows)]


def _one(conn: Connection, sql: str, params: list[Any]) -> dict[str, Any] | None:
    found = _run(conn, sql, params, True)
    return found[0] if found else None


def read(conn: Connection, cycle_id: str) -> dict[str, Any] | None:
    return _one(conn, _READ, [cycle_id])


def read_many(conn: Connection, cycle_ids: list[str]) -> list[dict[str, Any]]:
    """Planned afresh each time: prepared on a young table, the statement's generic plan kept
    a sequential scan as the table grew (a table scan a batch, until autovacuum's first
    ANALYZE), where a plan of the moment takes the `cycle_id` index."""
    rows = pg_direct.execute(conn, _READ_MANY, [cycle_ids], rows=True, prepare=False)
    return [dict(zip(_COLUMNS, r, strict=True)) for r in rows]


def insert_new(conn: Connection, values: dict[str, Any]) -> dict[str, Any] | None:
    row = {c: values.get(c) for c in _NEW}
    found = pg_direct.execute(conn, _INSERT, [_value(c, v) for c, v in row.items()], rows=True)
    return {"id": found[0][0], **row} if found else None


def update_row(conn: Connection, row_id: int, changed: dict[str, Any]) -> None:
    keys = tuple(sorted(changed))
    _run(conn, _update(keys), [*(_value(k, changed[k]) for k in keys), row_id], False)


def insert_all(conn: Connection, rows: list[dict[str, Any]]) -> int:
    """Insert new cycles in one round trip; how many were inserted (a cycle stored already is
    left as it is and not counted)."""
    params = [[_value(c, r.get(c)) for c in _NEW] for r in rows]
    return pg_direct.execute_many(conn, _INSERT, params, returning=True)


def update_all(conn: Connection, keys: tuple[str, ...], changes: list[tuple[int, dict[str, Any]]]) -> None:
    """Write the `keys` columns of several rows (row id, values) in one round trip."""
    params = [[*(_value(k, changed[k]) for k in keys), row_id] for row_id, changed in changes]
    pg_direct.execute_many(conn, _update(keys), params)
