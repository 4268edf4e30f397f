"""Engines and sessions for the store: SQLite (WAL, busy timeout) or PostgreSQL, by URL."""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import DisconnectionError
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
    # a bulk insert into the index (its full-text triggers) spills each row's statement
    # journal past SQLite's 64 KiB to a file in /var/tmp: tens of thousands of writes per
    # batch, and index text outside the data folder. In memory it is a few pages a row.
    cur.execute("PRAGMA temp_store=MEMORY")
    cur.close()


def _sqlite_begin(conn: Any) -> None:
    # A writer takes the lock up front (BEGIN IMMEDIATE), so two writers queue on the busy
    # timeout instead of one failing with "database is locked" when it upgrades a read lock.
    # Readers stay deferred and never block writers under WAL.
    write = conn.get_execution_options().get(_WRITE, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _private_file(path: Path) -> None:
    """The store's folder (0700 when octel creates it) and its file, created 0600 before SQLite
    opens it; SQLite gives its -wal and -shm files the database file's mode."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):  # a file another user owns keeps its mode
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    for suffix in ("-wal", "-shm"):  # left 0644 by an older octel
        with contextlib.suppress(OSError):
            os.chmod(f"{path}{suffix}", 0o600)


def make_engine(url: str) -> Engine:
    """An engine for `url`; a SQLite file's folder is created if missing, private to its owner."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            _private_file(Path(parsed.database))
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
    engine = create_engine(url, pool_size=10, max_overflow=20)
    event.listen(engine, "checkin", _checked_in)
    event.listen(engine, "checkout", _ping_if_idle)
    return engine


# A connection back from the pool is pinged (a round trip) only when it sat there this long:
# a busy server checks connections out hundreds of times a second, and SQLAlchemy's
# `pool_pre_ping` cost every one of them a round trip. A server restarted meanwhile fails the
# first statement of a connection used just before; SQLAlchemy then drops the whole pool, so
# the next checkouts connect afresh (and the group commit writes such a batch again, alone).
IDLE_PING_SECONDS = 5.0
_IDLE_SINCE = "octel_idle_since"


def _checked_in(_dbapi_conn: Any, record: Any) -> None:
    record.info[_IDLE_SINCE] = time.monotonic()


def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    since = record.info.get(_IDLE_SINCE)
    if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
        return  # new, or back from a request a moment ago
    try:
        with dbapi_conn.cursor() as cur:
            cur.execute("SELECT 1")
        dbapi_conn.rollback()  # the ping's own transaction: the pool hands out none open
    except Exception as e:  # the pool connects afresh and tries again
        raise DisconnectionError(f"the store's connection was lost: {e}") from e


def _writer(engine: Engine) -> Engine:
    """`engine` with the write option, made once per engine: making it costs about as much as
    opening the session itself, and every write transaction asks for it."""
    found: Engine | None = getattr(engine, "_octel_writer", None)
    if found is None:
        found = engine.execution_options(**{_WRITE: True})
        setattr(engine, "_octel_writer", found)  # noqa: B010 (an attribute Engine does not declare)
    return found


@contextmanager
def session_scope(engine: Engine, *, write: bool = True) -> Iterator[Session]:
    """One transaction: committed when the block ends, rolled back on an exception."""
    bind = _writer(engine) if write else engine
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
        _even_row_counts(conn)
        conn.commit()
        conn.exec_driver_sql("ANALYZE sqlite_schema")  # load the edited statistics


def _even_row_counts(conn: Any) -> None:
    """Give every full index of a table the same row count in `sqlite_stat1`: the median of
    those the sampling found.

    A sampled ANALYZE guesses each index's rows on its own (491,000 for one index of
    `session_index` and 919,000 for another, of 1,000,000), and the planner then took the index
    it thought smaller over the one that held every column the query read: a text search's walk
    read the table for each row (25 ms instead of 3). Partial indexes keep their own count."""
    stats = conn.exec_driver_sql("SELECT tbl, idx, stat FROM sqlite_stat1 WHERE idx IS NOT NULL").all()
    by_table: dict[str, dict[str, str]] = {}
    for tbl, idx, stat in stats:
        by_table.setdefault(tbl, {})[idx] = stat
    for tbl, found in by_table.items():
        partial = {r[1] for r in conn.exec_driver_sql(f'PRAGMA index_list("{tbl}")') if r[4]}
        full = {idx: stat.split(" ", 1) for idx, stat in found.items() if idx not in partial}
        if len(full) < 2:
            continue
        rows = statistics.median_low(int(parts[0]) for parts in full.values())
        for idx, parts in full.items():
            stat = " ".join([str(rows), *parts[1:]])
            conn.exec_driver_sql(
                "UPDATE sqlite_stat1 SET stat = ? WHERE tbl = ? AND idx = ?", (stat, tbl, idx)
            )
