"""`octel import dispatch-db` goes row by row: a bad row is reported with its reason and
skipped, and the good rows of its batch are stored (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.services.ingest.dispatch_import import import_dispatch_db
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle
from telemetry.timeutil import utcnow

RED = Redactor(b"k" * 32)
GOOD = ("2026-10-01T10:00:00Z", "2026-10-01T10:05:00Z", 4, 60.0, 1.5, "done")
ROWS: list[tuple[Any, ...]] = [
    ("ok-1", *GOOD),
    ("inf-wall", "2026-10-01T10:00:00Z", None, 4, float("inf"), 0.0, "done"),
    ("ok-2", *GOOD),
    ("huge-wall", None, "2026-10-01T10:05:00Z", 4, 1e300, 0.0, "done"),
    ("far-epoch", 1e300, None, 4, 1.0, 0.0, None),
    ("huge-count", "2026-10-01T10:00:00Z", "2026-10-01T10:05:00Z", 2**40, 1.0, 0.0, "done"),
    ("nan-wall", "2026-10-01T10:00:00Z", "2026-10-01T10:05:00Z", 1, "NaN", 0.0, "done"),  # as text
    ("ok-inf-extra", "2026-10-01T10:00:00Z", "2026-10-01T10:05:00Z", 1, 5.0, float("inf"), "done"),
    ("ok-3", *GOOD),
]
BAD = {"inf-wall", "huge-wall", "far-epoch", "huge-count", "nan-wall"}


def _source(path: Path) -> Path:
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE dispatch_review_cycles (cycle_id TEXT, started_at, ended_at, candidates_count, "
        "worker_wallclock_seconds REAL, score REAL, terminal_state TEXT)"
    )
    db.executemany("INSERT INTO dispatch_review_cycles VALUES (?,?,?,?,?,?,?)", ROWS)
    db.commit()
    db.close()
    return path


def test_bad_rows_are_reported_and_the_good_rows_of_their_batch_stored(
    engine: Engine, tmp_path: Path
) -> None:
    report = import_dispatch_db(engine, _source(tmp_path / "old.db"), utcnow(), RED)
    assert report["totals"]["rows"] == len(ROWS)
    assert report["totals"]["rejected"] == len(BAD)
    assert report["totals"]["imported"] == len(ROWS) - len(BAD)
    rejected = {r["row"]: r["reason"] for r in report["rejects"]}
    assert set(rejected) == BAD
    assert all(reason and "Traceback" not in reason for reason in rejected.values())
    assert "finite" in rejected["inf-wall"] and "finite" in rejected["nan-wall"]
    assert "candidates_count" in rejected["huge-count"]
    with session_scope(engine, write=False) as db:
        stored = {c.cycle_id: c for c in db.exec(select(Cycle)).all()}
    assert set(stored) == {r[0] for r in ROWS} - BAD
    # a value JSON cannot hold, in a column octel does not read, is kept as text
    assert stored["ok-inf-extra"].raw is not None
    assert stored["ok-inf-extra"].raw["begin"]["meta"]["row"]["score"] == "inf"
    again = import_dispatch_db(engine, tmp_path / "old.db", utcnow(), RED)
    assert again["totals"]["unchanged"] == len(ROWS) - len(BAD) and again["totals"]["rejected"] == len(BAD)
