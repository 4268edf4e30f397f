"""The `/metrics` benchmark's SQLite store is generated inside SQLite for speed: it holds the
same rows as the Python rows its PostgreSQL store is loaded from, and the schema the migrations
made (every index and trigger back after the load)."""

from __future__ import annotations

import importlib
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

BENCH = Path(__file__).parents[2] / "benchmarks"
N = 12_000  # three cycles left open (one in 5,000), 1,200 sessions and findings


def _bench() -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    return importlib.import_module("bench_scrape"), importlib.import_module("fleet_store")


def _rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()


def _schema(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        q = "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_stat%'"
        return conn.execute(q + " ORDER BY name").fetchall()


def test_rows_made_in_sql_are_the_rows_made_in_python(tmp_path: Path) -> None:
    bench, fleet_store = _bench()
    now = datetime(2026, 12, 1, 3, 4, 5, 678901, tzinfo=UTC)
    loader = bench._loader(N, now)
    in_sql, in_python, fresh = tmp_path / "sql.db", tmp_path / "py.db", tmp_path / "fresh.db"
    fleet_store.load(f"sqlite:///{in_sql}", loader)
    fleet_store.load(f"sqlite:///{in_python}", lambda put, _fill: loader(put, None))
    for table, count in (("cycle", N), ("session_index", N // 10), ("finding", N // 10)):
        got = _rows(in_sql, table)
        assert len(got) == count and got == _rows(in_python, table), table
    with sqlite3.connect(in_sql) as conn:
        assert conn.execute("SELECT count(*) FROM cycle WHERE ended_at IS NULL").fetchone() == (3,)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    engine = make_engine(f"sqlite:///{fresh}")
    upgrade(engine)
    engine.dispose()
    assert _schema(in_sql) == _schema(fresh)
