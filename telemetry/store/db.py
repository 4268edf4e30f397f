"""Engines and sessions for the store: SQLite (WAL, busy timeout) or PostgreSQL, by URL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

__all__ = ["make_engine", "refresh_planner_stats", "session_scope"]

_BUSY_TIMEOUT_MS = 30_000
_WRITE = "octel_write"


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


def _sqlite_begin(conn: Any) -> None:
    # A writer takes the lock up front (BEGIN IMMEDIATE), so two writers queue on the busy
    # timeout instead of one failing with "database is locked" when it upgrades a read lock.
    # Readers stay deferred and never block writers under WAL.
    write = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str) -> Engine:
    """An engine for `url`; a SQLite file's folder is created if missing."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"check_same_thread": False, "timeout": _BUSY_TIMEOUT_MS / 1000},
        )
        event.listen(engine, "connect", _sqlite_pragmas)

        @event.listens_for(engine, "connect")
        def _no_pysqlite_begin(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # let SQLAlchemy's "begin" event issue BEGIN

        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


@contextmanager
def session_scope(engine: Engine, *, write: bool = True) -> Iterator[Session]:
    """One transaction: committed when the block ends, rolled back on an exception."""
    bind = engine.execution_options(**{_WRITE: True}) if write else engine
    with Session(bind, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


def refresh_planner_stats(engine: Engine) -> None:
    """Give SQLite's planner current table statistics (PostgreSQL's autovacuum does its own).

    Without them a grown store can pick the wrong index: the 24-hour cycle summary walked a
    driver's whole history instead of the last day. `analysis_limit` samples each index, so
    this stays cheap at millions of rows.
    """
    if engine.dialect.name != "sqlite":
        return
    with engine.execution_options(**{_WRITE: True}).connect() as conn:
        conn.exec_driver_sql("PRAGMA analysis_limit=1000")
        conn.exec_driver_sql("ANALYZE")
        conn.commit()
