"""The `cycle` table's ingestion statements built with SQLAlchemy Core: `CoreCycleRows`, the
`cycle_rows.CycleRows` of a SQLite store (`cycle_rows_pg` sends them by psycopg on PostgreSQL).

Each statement is built once and cached compiled; a row comes back as a `CycleRow` straight
from the result's tuple (its fields are the table's columns, in order).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from telemetry.store.cycle_row import CycleRow
from telemetry.store.models import Cycle

__all__ = ["CoreCycleRows"]

_T = Cycle.__table__  # type: ignore[attr-defined]
_NEW = tuple(c.name for c in _T.columns if c.name != "id")
_READ = select(*_T.columns).where(_T.c.cycle_id == bindparam("cid"))
_READ_MANY = select(*_T.columns).where(_T.c.cycle_id.in_(bindparam("cids", expanding=True)))


def _insert(dialect: str) -> Any:
    if dialect in ("postgresql", "sqlite"):
        ins = postgresql.insert(_T) if dialect == "postgresql" else sqlite.insert(_T)
        return ins.on_conflict_do_nothing(index_elements=["cycle_id"]).returning(*_T.columns)
    return insert(_T).returning(*_T.columns)


@functools.cache
def _update(keys: tuple[str, ...]) -> Any:
    return update(_T).where(_T.c.id == bindparam("row_id")).values({k: bindparam(f"v_{k}") for k in keys})


class CoreCycleRows:
    """The cycle table's rows through SQLAlchemy Core, for the store's `dialect`. Its writes go
    out as they come (`holds_back` false): on SQLite, in process, there are no round trips to
    save."""

    holds_back = False

    def __init__(self, dialect: str) -> None:
        self._insert = _insert(dialect)

    def read(self, conn: Connection, cycle_id: str) -> CycleRow | None:
        row = conn.execute(_READ, {"cid": cycle_id}).first()
        return CycleRow(*row) if row is not None else None

    def read_many(self, conn: Connection, cycle_ids: list[str]) -> list[CycleRow]:
        return [CycleRow(*r) for r in conn.execute(_READ_MANY, {"cids": cycle_ids})]

    def insert_new(self, conn: Connection, values: Mapping[str, Any]) -> CycleRow | None:
        row = conn.execute(self._insert, {c: values.get(c) for c in _NEW}).first()
        return CycleRow(*row) if row is not None else None

    def update_row(self, conn: Connection, row_id: int, changed: Mapping[str, Any]) -> None:
        keys = tuple(sorted(changed))
        conn.execute(_update(keys), {"row_id": row_id, **{f"v_{k}": changed[k] for k in keys}})

    def insert_all(self, conn: Connection, rows: Sequence[CycleRow]) -> int:
        """Insert new cycles; how many were inserted (a cycle stored already is left as it is
        and not counted)."""
        return sum(self.insert_new(conn, {c: getattr(r, c) for c in _NEW}) is not None for r in rows)

    def update_all(
        self, conn: Connection, keys: tuple[str, ...], changes: Sequence[tuple[int, Mapping[str, Any]]]
    ) -> None:
        """Write the `keys` columns of several rows (row id, values)."""
        if changes:
            conn.execute(_update(keys), [{"row_id": i, **{f"v_{k}": c[k] for k in keys}} for i, c in changes])
