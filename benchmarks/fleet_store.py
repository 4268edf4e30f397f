"""Stores at fleet size for the benchmarks, on SQLite or a real PostgreSQL, loaded once and kept.

Loading 10,000,000 cycles takes minutes, so a loaded store is cached and found again by its
name (what it holds and how many rows): SQLite files under `~/.cache/octel-bench/`, PostgreSQL
databases in a cluster kept under the same folder (or on the server `--dsn` names). A store only
gets its final name once loaded: an interrupted load is started again, never half-used.

Bulk load: COPY on PostgreSQL. On SQLite, with no journal and no syncing during the load (a
load that fails is started again anyway), every index and trigger dropped first and built again
after (a sort per index instead of a B-tree insert per row and index; the text-search index
rebuilt in one pass): rows a loader generates in SQL (`fill`, a recursive CTE over the row
number, ~10 times faster than Python rows) go in with one INSERT … SELECT, other rows through
executemany in transactions of 100,000.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pgserver
from realparts import free_port

__all__ = [
    "CACHE",
    "Fill",
    "Loader",
    "Put",
    "bulk_load",
    "cached_postgres",
    "fleet_store",
    "load",
    "sqlite_time",
]

CACHE = Path(os.environ.get("OCTEL_BENCH_CACHE", "~/.cache/octel-bench")).expanduser()
_BATCH = 100_000
# A server sized for a fleet store on a small machine (see docs/fleet.md): durable (fsync and
# synchronous commit on), enough shared buffers to keep the hot indexes in memory.
PG_SETTINGS = {
    "max_connections": "200",
    "shared_buffers": "1GB",
    "effective_cache_size": "4GB",
    "work_mem": "32MB",
    "maintenance_work_mem": "512MB",
    "max_wal_size": "4GB",
    "random_page_cost": "1.1",
}

# put(table, columns, rows): append rows made in Python
Put = Callable[[str, Sequence[str], Iterable[Sequence[Any]]], None]
# fill(table, columns, n, expressions): append n rows made inside the database, each column an
# SQL expression of the row number `i` (0 to n - 1); offered on SQLite only
Fill = Callable[[str, Sequence[str], int, Sequence[str]], None]
# a loader is called with put and fill (None where rows must come from Python)
Loader = Callable[[Put, Fill | None], None]


def _pg_root() -> Path:
    """The cluster's folder. As root, the server runs as `postgres`, which cannot enter a
    private home folder: the cluster then lives under /var/tmp, which survives reboots too."""
    if os.geteuid() == 0:
        return Path("/var/tmp/octel-bench-pg")
    return CACHE / "pg"


@contextmanager
def cached_postgres() -> Iterator[str]:
    """A durable PostgreSQL cluster kept between runs; yields its superuser URL (no database)."""
    bins = pgserver.pg_binaries()
    if bins is None:
        raise SystemExit("no PostgreSQL: " + pgserver.HOW)
    initdb, pg_ctl = bins
    root = _pg_root()
    data, sock = root / "data", root / "sock"
    who = pgserver._as_postgres_user()
    run: dict[str, Any] = {"check": True, "capture_output": True, "env": {**os.environ, "LC_ALL": "C"}, **who}
    if not (data / "PG_VERSION").exists():
        shutil.rmtree(root, ignore_errors=True)
        sock.mkdir(parents=True)
        if who:
            for p in (root, sock):
                os.chown(p, int(who["user"]), int(who["group"]))
        subprocess.run([initdb, "-D", str(data), "-U", "octel", "-A", "trust", "-E", "UTF8"], **run)
    if subprocess.run([pg_ctl, "-D", str(data), "status"], **{**run, "check": False}).returncode == 0:
        # another benchmark run has it started: share it, and leave stopping it to that run
        port = int((data / "postmaster.pid").read_text().splitlines()[3])
        yield f"postgresql+psycopg://octel@127.0.0.1:{port}/postgres"
        return
    port = free_port()
    opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {sock} " + " ".join(
        f"-c {k}={v}" for k, v in PG_SETTINGS.items()
    )
    log = root / "log"
    subprocess.run([pg_ctl, "-D", str(data), "-o", opts, "-w", "-t", "120", "-l", str(log), "start"], **run)
    try:
        yield f"postgresql+psycopg://octel@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], **{**run, "check": False})


def _sqlite_value(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")  # how SQLAlchemy stores DateTime on SQLite
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, dict | list):
        return json.dumps(v)
    return v


def sqlite_time(base: datetime, offset_s: str) -> str:
    """SQL giving what `_sqlite_value(base + timedelta(seconds=offset))` stores, for a whole
    number of seconds `offset_s` (an SQL expression)."""
    whole = int(base.replace(microsecond=0).timestamp())
    day = f"strftime('%Y-%m-%d %H:%M:%S', {whole} + ({offset_s}), 'unixepoch')"
    return f"({day} || '.{base.microsecond:06d}')"


def _sqlite_fill(conn: Any, table: str, columns: Sequence[str], n: int, exprs: Sequence[str]) -> None:
    if n <= 0:
        return
    conn.execute(
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ?) "
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(exprs)} FROM k",
        (n - 1,),
    )
    conn.commit()


def _pg_value(v: Any) -> Any:
    return json.dumps(v) if isinstance(v, dict | list) else v


def bulk_load(
    conn: Any, dialect: str, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]
) -> None:
    """Append `rows` to `table` through a DB-API connection: COPY on PostgreSQL (psycopg),
    executemany in transactions of 100,000 rows on SQLite."""
    cols = ", ".join(columns)
    if dialect == "postgresql":
        with conn.cursor() as cur, cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
            for r in rows:
                copy.write_row([_pg_value(v) for v in r])
        conn.commit()
        return
    sql = f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(columns))})"
    batch: list[list[Any]] = []
    for r in rows:
        batch.append([_sqlite_value(v) for v in r])
        if len(batch) == _BATCH:
            conn.executemany(sql, batch)
            conn.commit()
            batch = []
    if batch:
        conn.executemany(sql, batch)
    conn.commit()


def load(url: str, loader: Loader) -> None:
    """Make the schema at `url` and load it by `loader` (the store's final name is given by
    `fleet_store`)."""
    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade

    engine = make_engine(url)
    upgrade(engine)
    raw = engine.raw_connection()
    try:
        dbapi = raw.driver_connection
        dialect = engine.dialect.name
        put: Put = lambda table, columns, rows: bulk_load(dbapi, dialect, table, columns, rows)  # noqa: E731
        if dialect == "postgresql":
            loader(put, None)
            dbapi.commit()
            dbapi.autocommit = True
            dbapi.execute("VACUUM (ANALYZE)")  # visibility map for index-only scans, statistics
            return
        with _sqlite_bulk(dbapi):
            loader(put, lambda table, columns, n, exprs: _sqlite_fill(dbapi, table, columns, n, exprs))
        dbapi.execute("PRAGMA analysis_limit=1000")
        dbapi.execute("ANALYZE")
        dbapi.commit()
    finally:
        raw.close()
        engine.dispose()


@contextmanager
def _sqlite_bulk(conn: Any) -> Iterator[None]:
    """No journal, no syncing, a large page cache, no indexes or triggers while loading; then
    the indexes and triggers as the migrations made them, and the text-search index rebuilt."""
    conn.commit()
    for pragma in ("journal_mode=OFF", "synchronous=OFF", "cache_size=-1048576"):
        conn.execute(f"PRAGMA {pragma}")
    schema = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND sql IS NOT NULL"
    ).fetchall()
    for kind, name, _ in schema:
        conn.execute(f'DROP {kind.upper()} "{name}"')
    conn.commit()
    yield
    for _, _, sql in sorted(schema, key=lambda r: r[0]):  # indexes, then triggers
        conn.execute(sql)
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'session_search'").fetchone():
        conn.execute("INSERT INTO session_search(session_search) VALUES ('rebuild')")
    conn.commit()
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL"):
        conn.execute(f"PRAGMA {pragma}")


@contextmanager
def fleet_store(engine: str, name: str, loader: Loader, *, dsn: str | None = None) -> Iterator[str]:
    """Yield the URL of store `name` on `engine` (sqlite or postgres), loading it by `loader`
    the first time. `dsn`: an existing PostgreSQL server (superuser URL) instead of the cached
    cluster."""
    if engine == "sqlite":
        folder = CACHE / name
        db = folder / "octel.db"
        if not db.exists():
            loading = CACHE / f"{name}.loading"
            shutil.rmtree(loading, ignore_errors=True)
            loading.mkdir(parents=True)
            load(f"sqlite:///{loading / 'octel.db'}", loader)
            shutil.rmtree(folder, ignore_errors=True)
            loading.rename(folder)
        yield f"sqlite:///{db}"
        return
    if engine != "postgres":
        raise SystemExit(f"--engine is sqlite or postgres, not {engine!r}")
    with _given(dsn) if dsn else cached_postgres() as server:
        yield _pg_database(server, name.replace("-", "_"), loader)


@contextmanager
def _given(dsn: str) -> Iterator[str]:
    yield dsn if "+psycopg" in dsn else dsn.replace("postgresql://", "postgresql+psycopg://", 1)


def _pg_database(server: str, name: str, loader: Loader) -> str:
    import psycopg

    plain = server.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(plain, autocommit=True) as conn:
        names = {r[0] for r in conn.execute("SELECT datname FROM pg_database")}
        if name not in names:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}_loading"')
            conn.execute(f'CREATE DATABASE "{name}_loading"')
    base = server.rsplit("/", 1)[0]
    if name not in names:
        load(f"{base}/{name}_loading", loader)
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(f'ALTER DATABASE "{name}_loading" RENAME TO "{name}"')
    return f"{base}/{name}"
