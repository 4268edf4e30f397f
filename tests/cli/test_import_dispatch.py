"""`octel import dispatch-db` on SQLite files with the older dispatchers' table layouts."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from octelrun import Octel
from sqlmodel import select

from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle

# review: text ids, ISO times, nullable ended_at, *_count columns.
REVIEW = """
CREATE TABLE dispatch_review_cycles (
  cycle_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, ended_at TEXT,
  candidates_count INTEGER, claims_count INTEGER, terminal_state TEXT, worker_outcome TEXT,
  error_kind TEXT, session_id TEXT, worker_wallclock_seconds REAL, host TEXT)
"""
# implementer: integer ids, epoch seconds, ended_at NOT NULL (0 while running), short names.
IMPLEMENTER = """
CREATE TABLE dispatch_implementer_cycles (
  id INTEGER PRIMARY KEY AUTOINCREMENT, started_at INTEGER NOT NULL, ended_at INTEGER NOT NULL DEFAULT 0,
  candidates INTEGER, claims INTEGER, processed INTEGER, escalated INTEGER, terminal_state TEXT,
  worker_outcome TEXT, error_kind TEXT, session_id TEXT, worker_wallclock_s REAL)
"""
# conflict: epoch milliseconds, no ended_at at all: a terminal_state marks the end.
CONFLICT = """
CREATE TABLE conflict_drive_cycles (
  id INTEGER PRIMARY KEY, started_at INTEGER, swept INTEGER, terminal_state TEXT,
  worker_outcome TEXT, worker_wallclock_seconds REAL)
"""


def _build(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute(REVIEW)
    db.execute(IMPLEMENTER)
    db.execute(CONFLICT)
    db.executemany(
        "INSERT INTO dispatch_review_cycles VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (
                "rv-1",
                "2026-10-01T10:00:00Z",
                "2026-10-01T10:05:00Z",
                4,
                1,
                "done",
                "merged",
                None,
                "ses_a",
                290.0,
                "h1",
            ),
            (
                "rv-2",
                "2026-10-01 11:00:00",
                "2026-10-01 11:30:00",
                2,
                1,
                "failed",
                "timeout",
                "worker_timeout",
                None,
                1800.0,
                "h1",
            ),
            ("rv-3", "2026-10-01T12:00:00+00:00", None, 3, 0, None, None, None, None, None, "h2"),
            ("rv-bad", "not a time", None, 1, 1, None, None, None, None, None, None),
        ],
    )
    db.executemany(
        "INSERT INTO dispatch_implementer_cycles (started_at, ended_at, candidates, claims, processed,"
        " escalated, terminal_state, worker_outcome, error_kind, session_id, worker_wallclock_s)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
        [
            (1790000000, 1790000600, 1, 1, 1, 0, "done", "pushed", None, "ses_b", 590.0),
            (1790001000, 0, 1, 1, None, None, None, None, None, None, None),
            (1790002000, 1790002030, 0, 0, 0, 0, "idle", None, None, None, None),
        ],
    )
    db.executemany(
        "INSERT INTO conflict_drive_cycles VALUES (?,?,?,?,?,?)",
        [(7, 1790000000000, 3, "resolved", "rebased", 42.5), (8, 1790000100000, 0, None, None, None)],
    )
    db.commit()
    db.close()


def _counters(octel: Octel) -> dict[tuple[str, str], float]:
    with session_scope(octel.engine, write=False) as db:
        return {(m, str(sorted(lbl.items()))): v for m, lbl, v in read_all(db)}


def _cycles(octel: Octel) -> dict[str, Cycle]:
    with session_scope(octel.engine, write=False) as db:
        return {c.cycle_id: c for c in db.exec(select(Cycle)).all()}


def test_import_maps_every_layout_and_keeps_rows(octel: Octel, tmp_path: Path) -> None:
    src = tmp_path / "dispatch.db"
    _build(src)
    r = octel("import", "dispatch-db", str(src))
    assert r.exit_code == 1, r.output + r.stderr  # one row rejected: the good rows go in, the run fails
    assert "dispatch_review_cycles" in r.stdout and "rejected" in r.stdout
    cycles = _cycles(octel)
    assert set(cycles) == {
        "rv-1",
        "rv-2",
        "rv-3",
        "implementer-1",
        "implementer-2",
        "implementer-3",
        "conflict-7",
        "conflict-8",
    }
    rv1, rv3 = cycles["rv-1"], cycles["rv-3"]
    assert (rv1.driver, rv1.terminal_state, rv1.worker_outcome, rv1.session_id) == (
        "review",
        "done",
        "merged",
        "ses_a",
    )
    assert (rv1.candidates_count, rv1.claims_count, rv1.host) == (4, 1, "h1")
    assert rv3.ended_at is None and rv3.terminal_state is None
    impl = cycles["implementer-1"]
    assert (impl.driver, impl.processed_count, impl.worker_wallclock_seconds) == ("implementer", 1, 590.0)
    assert cycles["implementer-2"].ended_at is None  # ended_at 0: still running
    conflict = cycles["conflict-7"]
    assert (conflict.driver, conflict.swept_count, conflict.terminal_state) == ("conflict", 3, "resolved")
    assert conflict.ended_at is not None  # closed by its terminal state and wall clock
    assert cycles["conflict-8"].ended_at is None
    assert rv1.raw is not None and rv1.raw["begin"]["meta"]["row"]["cycle_id"] == "rv-1"  # row preserved
    assert rv1.raw["begin"]["meta"]["imported_from"] == "dispatch_review_cycles"


def test_rerun_is_idempotent_and_counts_each_finished_cycle_once(
    octel: Octel, tmp_path: Path, golden: Callable[[str, Any], None]
) -> None:
    src = tmp_path / "dispatch.db"
    _build(src)
    first = octel.json("import", "dispatch-db", str(src), code=1)
    golden("import_dispatch_db", {**first, "source": "<path>"})
    assert first["totals"] == {"rows": 9, "imported": 8, "finished": 0, "unchanged": 0, "rejected": 1}
    assert first["rejects"][0]["row"] == "rv-bad" and "not a time" in first["rejects"][0]["reason"]
    counted = _counters(octel)
    total = sum(v for (m, _), v in counted.items() if m == "cycles_total")
    assert total == 5  # rv-1, rv-2, implementer-1, implementer-3, conflict-7
    again = octel.json("import", "dispatch-db", str(src), code=1)
    assert again["totals"] == {"rows": 9, "imported": 0, "finished": 0, "unchanged": 8, "rejected": 1}
    assert _counters(octel) == counted

    # The older dispatcher finished two cycles since: the next import finishes them, once.
    db = sqlite3.connect(src)
    db.execute(
        "UPDATE dispatch_review_cycles SET ended_at = '2026-10-01T12:20:00Z', terminal_state = 'done'"
        " WHERE cycle_id = 'rv-3'"
    )
    db.execute(
        "UPDATE dispatch_implementer_cycles SET ended_at = 1790001500, terminal_state = 'failed' WHERE id = 2"
    )
    db.commit()
    db.close()
    third = octel.json("import", "dispatch-db", str(src), code=1)
    assert (third["totals"]["finished"], third["totals"]["unchanged"]) == (2, 6)
    after = _counters(octel)
    assert sum(v for (m, _), v in after.items() if m == "cycles_total") == 7
    assert octel.json("import", "dispatch-db", str(src), code=1)["totals"]["finished"] == 0
    assert _counters(octel) == after
    assert _cycles(octel)["rv-3"].terminal_state == "done"

    # once the bad row is mended at its source, the same import succeeds
    db = sqlite3.connect(src)
    db.execute("DELETE FROM dispatch_review_cycles WHERE cycle_id = 'rv-bad'")
    db.commit()
    db.close()
    clean = octel.json("import", "dispatch-db", str(src))
    assert clean["totals"]["rejected"] == 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such file"),
        (lambda p: p.write_text("hello, not sqlite" * 100), "not a SQLite database"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE other (x)").connection.commit(),
            "none of the dispatcher",
        ),
    ],
)
def test_bad_files_exit_2(octel: Octel, tmp_path: Path, make: object, message: str) -> None:
    path = tmp_path / "x.db"
    make(path)  # type: ignore[operator]
    r = octel("import", "dispatch-db", str(path))
    assert r.exit_code == 2
    assert message in r.stderr and "Traceback" not in r.stderr
