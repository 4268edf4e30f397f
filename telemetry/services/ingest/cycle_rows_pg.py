"""The `cycle` table's ingestion statements on PostgreSQL, sent by psycopg itself
(`telemetry.store.pg_direct`): `PgCycleRows`, the `cycle_rows.CycleRows` of a PostgreSQL store
(`cycle_rows_core` builds them with SQLAlchemy Core elsewhere).

The values are what SQLAlchemy would send (a JSON column's value wrapped as psycopg `Json`,
as its psycopg dialect does) and the rows what it would return.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.engine import Connection

from telemetry.store import pg_direct
from telemetry.store.cycle_row import CycleRow
from telemetry.store.models import Cycle

__all__ = ["PgCycleRows"]

_T = Cycle.__table__  # type: ignore[attr-defined]
_COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(CycleRow))  # the table's
_NEW = _COLUMNS[1:]  # all but the id
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


class PgCycleRows:
    """The cycle table's rows on PostgreSQL. Its writes may be held back and sent together
    (`holds_back`): each statement is a round trip to the server."""

    holds_back = True

    def read(self, conn: Connection, cycle_id: str) -> CycleRow | None:
        found = pg_direct.execute(conn, _READ, [cycle_id], rows=True)
        return CycleRow(*found[0]) if found else None

    def read_many(self, conn: Connection, cycle_ids: list[str]) -> list[CycleRow]:
        """Planned afresh each time: prepared on a young table, the statement's generic plan
        kept a sequential scan as the table grew (a table scan a batch, until autovacuum's
        first ANALYZE), where a plan of the moment takes the `cycle_id` index."""
        rows = pg_direct.execute(conn, _READ_MANY, [cycle_ids], rows=True, prepare=False)
        return [CycleRow(*r) for r in rows]

    def insert_new(self, conn: Connection, values: Mapping[str, Any]) -> CycleRow | None:
        row: list[Any] = [values.get(c) for c in _NEW]
        params = [_value(c, v) for c, v in zip(_NEW, row, strict=True)]
        found = pg_direct.execute(conn, _INSERT, params, rows=True)
        return CycleRow(found[0][0], *row) if found else None

    def update_row(self, conn: Connection, row_id: int, changed: Mapping[str, Any]) -> None:
        keys = tuple(sorted(changed))
        pg_direct.execute(conn, _update(keys), [*(_value(k, changed[k]) for k in keys), row_id])

    def insert_all(self, conn: Connection, rows: Sequence[CycleRow]) -> int:
        """Insert new cycles in one round trip; how many were inserted (a cycle stored
        already is left as it is and not counted)."""
        params = [[_value(c, getattr(r, c)) for c in _NEW] for r in rows]
        return pg_direct.execute_many(conn, _INSERT, params, returning=True)

    def update_all(
        self, conn: Connection, keys: tuple[str, ...], changes: Sequence[tuple[int, Mapping[str, Any]]]
    ) -> None:
        """Write the `keys` columns of several rows (row id, values) in one round trip."""
        params = [[*(_value(k, changed[k]) for k in keys), row_id] for row_id, changed in changes]
        pg_direct.execute_many(conn, _update(keys), params)
