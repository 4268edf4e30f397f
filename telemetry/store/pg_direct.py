"""The hottest ingestion statements on PostgreSQL, sent by psycopg itself.

A cycle begin or finish runs a few fixed statements (its row's insert, read and update; a
batch's advisory locks and counters). Through SQLAlchemy, even compiled and cached, each
statement's execution context, bind and result processing cost more CPU than psycopg sending
it. These go, as fixed SQL text with positional parameters, to the psycopg connection beneath
the transaction's SQLAlchemy connection: the same transaction, and psycopg still prepares a
statement it has run five times on a connection, as it does every other one.

An error is raised as SQLAlchemy's own (`DBAPIError.instance`: an `IntegrityError` is still
one, which callers retry). A connection psycopg found broken is invalidated and the pool's idle
connections closed, as SQLAlchemy does on a disconnect: the next checkout connects afresh.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

__all__ = ["execute", "execute_many", "planned_as_run"]


def execute(
    conn: Connection, sql: str, params: Sequence[Any], *, rows: bool = False, prepare: bool | None = None
) -> list[tuple[Any, ...]]:
    """Run `sql` (`%s` placeholders) on `conn`'s psycopg connection; its rows when `rows`.
    `prepare=False`: planned afresh each time (see psycopg's `execute`)."""
    import psycopg

    pg = conn.connection.driver_connection
    try:
        cur = pg.execute(sql, params, prepare=prepare)  # type: ignore[union-attr]
        return cur.fetchall() if rows else []
    except psycopg.Error as e:
        raise _raised(conn, sql, params, e) from e


def execute_many(
    conn: Connection, sql: str, params: Sequence[Sequence[Any]], *, returning: bool = False
) -> int:
    """Run `sql` once for each parameter list, sent together (psycopg's pipeline: one round
    trip, not one each); the number of rows they returned when `returning`."""
    import psycopg

    pg = conn.connection.driver_connection
    try:
        with pg.cursor() as cur:  # type: ignore[union-attr]
            cur.executemany(sql, params, returning=returning)
            found = 0
            while returning:
                found += len(cur.fetchall())
                if not cur.nextset():
                    break
            return found
    except psycopg.Error as e:
        raise _raised(conn, sql, params, e) from e


def _raised(conn: Connection, sql: str, params: Sequence[Any], e: Exception) -> Exception:
    """A psycopg error as SQLAlchemy raises it; a lost connection invalidated first."""
    import psycopg

    pg = conn.connection.driver_connection
    lost = bool(pg.broken or pg.closed)  # type: ignore[union-attr]
    if lost:  # as SQLAlchemy does on a disconnect: this one, and the pool's idle ones
        conn.invalidate(e)
        conn.engine.pool.dispose()
    return DBAPIError.instance(sql, list(params), e, psycopg.Error, connection_invalidated=lost)


@contextmanager
def planned_as_run(conn: Connection) -> Iterator[None]:
    """Inside the block, no statement on `conn` is prepared: each is planned for the tables as
    they are when it runs. A statement psycopg prepared while its table was young can keep
    PostgreSQL's generic plan, a scan of the whole table, as the table grows, until ANALYZE
    runs on it. A no-op elsewhere than PostgreSQL."""
    if conn.dialect.name != "postgresql":
        yield
        return
    pg = conn.connection.driver_connection
    kept = pg.prepare_threshold  # type: ignore[union-attr]
    pg.prepare_threshold = None  # type: ignore[union-attr]
    try:
        yield
    finally:
        pg.prepare_threshold = kept  # type: ignore[union-attr]
