"""Prune, dispatch import, run paging and `why` on SQLite and a real PostgreSQL."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import select
from storeseed import T0, add, cycle, run, seed_fleet, session

from archiver.redact import Redactor
from telemetry.queries.costs import GROUP_KEYS, cost_breakdown
from telemetry.queries.runs import RunFilter, list_runs
from telemetry.queries.why import why
from telemetry.services.index.prune import prune
from telemetry.services.ingest.dispatch_import import import_dispatch_db
from telemetry.store import aggregates
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Aggregate, Cycle, SessionIndex


def _aggregates(engine: Engine) -> list[tuple[str, str, float]]:
    with session_scope(engine, write=False) as db:
        return sorted((a.metric, a.labels, a.value) for a in db.exec(select(Aggregate)).all())


def test_prune_on_both_stores(engine: Engine, tmp_path: Path) -> None:
    seed_fleet(engine)  # everything at T0 or later, except ses_old two days earlier
    with session_scope(engine) as db:
        aggregates.bump(db, "sessions_archived_total", {"agent": "build"}, 6)
    before = _aggregates(engine)
    report = prune(engine, tmp_path, T0 - timedelta(days=1))
    assert (report["sessions"], report["trees"]) == (1, 1)
    with session_scope(engine, write=False) as db:
        left = set(db.exec(select(SessionIndex.session_id)).all())
    assert "ses_old" not in left and "ses_root" in left
    # A later cutoff: the stuck tree and the session of the failed cycle stay.
    report = prune(engine, tmp_path, T0 + timedelta(days=1))
    with session_scope(engine, write=False) as db:
        left = set(db.exec(select(SessionIndex.session_id)).all())
        cycles = set(db.exec(select(Cycle.cycle_id)).all())
    assert left == {"ses_root", "ses_child_a", "ses_child_b", "ses_grand", "ses_other"}
    assert cycles == {"cyc-2", "cyc-3"}  # failed, and still in flight
    assert report["kept"]["agent_runs"] == 2
    assert _aggregates(engine) == before


def test_dispatch_import_on_both_stores(engine: Engine, tmp_path: Path) -> None:
    src = tmp_path / "old.db"
    db = sqlite3.connect(src)
    db.execute(
        "CREATE TABLE dispatch_review_cycles (id INTEGER PRIMARY KEY, started_at TEXT, ended_at TEXT,"
        " terminal_state TEXT, worker_outcome TEXT)"
    )
    db.executemany(
        "INSERT INTO dispatch_review_cycles VALUES (?,?,?,?,?)",
        [
            (
                i,
                "2026-10-01T10:00:00Z",
                "2026-10-01T10:01:00Z" if i % 2 else None,
                "done" if i % 2 else None,
                "merged",
            )
            for i in range(1, 8)
        ],
    )
    db.commit()
    db.close()
    first = import_dispatch_db(engine, src, T0, RED)
    assert first["totals"]["imported"] == 7
    again = import_dispatch_db(engine, src, T0, RED)
    assert again["totals"]["unchanged"] == 7
    counted = [a for a in _aggregates(engine) if a[0] == "cycles_total"]
    assert [v for _, _, v in counted] == [4.0]


def test_runs_paging_on_both_stores(engine: Engine) -> None:
    add(
        engine,
        *(
            run(
                f"r{i}",
                agent="a" if i % 2 else "b",
                created_at=T0 + timedelta(minutes=i // 3),
                is_error=i % 5 == 0,
            )
            for i in range(20)
        ),
    )
    with session_scope(engine, write=False) as db:
        seen, cursor = [], None
        while True:
            page = list_runs(db, RunFilter(limit=3, cursor=cursor))
            seen += [r.run_key for r in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
        errors = list_runs(db, RunFilter(errors_only=True, agent="b")).items
    assert len(seen) == len(set(seen)) == 20
    assert {r.run_key for r in errors} == {"r0", "r10"}


def test_why_on_both_stores(engine: Engine, tmp_path: Path) -> None:
    seed_fleet(engine)
    add(
        engine,
        session("ses_err", error_kind="ProviderAuthError"),
        cycle("cyc-x", "review", session_id="ses_err", ended_at=T0, terminal_state="aborted"),
    )
    with session_scope(engine, write=False) as db:
        got = {i: why(db, i, tmp_path) for i in ("ses_child_a", "cyc-2", "cyc-x", "nope")}
    codes = {i: a.code if a is not None else None for i, a in got.items()}
    assert codes == {"ses_child_a": "loop_detected", "cyc-2": "timed_out", "cyc-x": "aborted", "nope": None}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('fleet') / 'octel.db'}")
    upgrade(eng)
    seed_fleet(eng)
    return eng


RED = Redactor(b"k" * 32)  # every stored input passes a redactor
_GROUPINGS = [list(c) for n in range(len(GROUP_KEYS) + 1) for c in combinations(GROUP_KEYS, n)]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(by=st.sampled_from(_GROUPINGS), days=st.sampled_from([None, 1, 3, 30]))
def test_any_grouping_adds_up_to_the_same_totals(fleet: Engine, by: list[str], days: int | None) -> None:
    since = T0 - timedelta(days=days) if days else None
    with session_scope(fleet, write=False) as db:
        got = cost_breakdown(db, by, since)
        flat = cost_breakdown(db, [], since)
    assert got.totals.count == flat.totals.count == sum(r.count for r in got.rows)
    assert got.totals.tokens == flat.totals.tokens
    assert got.totals.cost_usd == pytest.approx(flat.totals.cost_usd)
    keys = [(r.source, *(getattr(r, k) for k in by)) for r in got.rows]
    assert len(keys) == len(set(keys))  # one row per group
