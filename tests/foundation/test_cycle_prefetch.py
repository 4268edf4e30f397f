"""A batch of cycle writes reads the stored rows of its cycles in one statement
(`cycle_rows.prefetch`) and, on PostgreSQL, writes its new rows and changes together at its end
(`cycle_rows.deferred`): every write of the batch gets the answer, and leaves the row, it
would have written alone, whatever else the same batch wrote to the same cycle first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from commit_hold import hold_commit
from sqlalchemy.engine import Engine
from sqlmodel import Session, select
from store_templates import migrate_by_copy

from telemetry.queries.cycles import cycle_dict
from telemetry.services.ingest import cycle_rows, ingest
from telemetry.services.ingest.group_commit import GroupCommit
from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle
from telemetry.timeutil import utcnow

# (what, cycle, driver): one batch; each cycle named by its part in it
_BATCH = [
    ("begin", "new", "d"),  # begun in the batch
    ("finish", "new", "d"),  # then finished in the same batch
    ("finish", "new", "d"),  # and that finish retried there
    ("finish", "stored", "d"),  # a cycle begun before the batch
    ("finish", "orphan", "d"),  # never begun: its start synthesised
    ("begin", "orphan", "d"),  # its late begin
    ("finish", "theirs", "d"),  # another driver's cycle: a conflict
    ("begin", "stored", "d"),  # a retried begin
    ("finish", "stored", "other"),  # another driver's finish of a cycle the batch finished
]
_BEFORE = [("begin", "stored", "d"), ("begin", "theirs", "other")]
_TIMES = ("started_at", "ended_at", "duration_s", "elapsed_s")


@pytest.fixture
def commit(engine: Engine) -> Iterator[GroupCommit]:
    g = GroupCommit(
        engine,
        expected=(ingest.ConflictError,),
        threads=1,
        prefetch=cycle_rows.prefetch,
        deferred=cycle_rows.deferred,
    )
    g.start()
    yield g
    g.close()


def _write(prefix: str, what: str, cid: str, driver: str) -> tuple[Callable[[Session], Any], list[str]]:
    if what == "begin":
        b = ingest.CycleBegin(cycle_id=prefix + cid, driver=driver)
        return (lambda db: ingest.begin_clean(db, b, utcnow())), ingest.cycle_lock_keys(b)
    f = ingest.CycleFinish(cycle_id=prefix + cid, driver=driver, terminal_state="done", processed_count=2)
    return (lambda db: ingest.finish_clean(db, f, utcnow())), ingest.cycle_lock_keys(f)


def _answer(prefix: str, f: Future[Any]) -> Any:
    try:
        row, news = f.result(30)
    except ingest.ConflictError as e:
        return ("conflict", str(e).replace(prefix, ""))
    d = {k: v for k, v in cycle_dict(row).items() if k not in _TIMES}
    return (d["cycle_id"].removeprefix(prefix), d | {"cycle_id": None}, news, sorted(row.raw or {}))


def _rows(engine: Engine, prefix: str) -> list[tuple[Any, ...]]:
    with session_scope(engine, write=False) as db:
        rows = db.exec(select(Cycle).where(Cycle.cycle_id.startswith(prefix))).all()  # type: ignore[attr-defined]
        return sorted(
            (
                c.cycle_id.removeprefix(prefix),
                c.driver,
                c.ended_at is None,
                c.start_synthesised,
                c.terminal_state,
                c.processed_count,
                sorted(c.raw or {}),
            )
            for c in rows
        )


def test_a_batch_that_reads_its_rows_at_once_answers_as_writes_one_by_one(
    commit: GroupCommit, engine: Engine
) -> None:
    for prefix in ("alone-", "batch-"):
        for what, cid, driver in _BEFORE:
            fn, keys = _write(prefix, what, cid, driver)
            commit.submit(fn, keys).result(30)
    alone = []
    for what, cid, driver in _BATCH:  # each its own batch: no prefetch
        fn, keys = _write("alone-", what, cid, driver)
        alone.append(_answer("alone-", commit.submit(fn, keys, ["alone-" + cid])))
    release, held = hold_commit(commit)
    batches = commit.batches
    futures = []
    for what, cid, driver in _BATCH:
        fn, keys = _write("batch-", what, cid, driver)
        futures.append(commit.submit(fn, keys, ["batch-" + cid]))
    release.set()
    held.result(30)
    together = [_answer("batch-", f) for f in futures]
    assert commit.batches == batches + 2  # the held write, then the batch in one transaction
    assert together == alone
    assert _rows(engine, "batch-") == _rows(engine, "alone-")
    with session_scope(engine, write=False) as db:
        counted = sum(v for m, labels, v in read_all(db) if m == "cycles_total" and labels["driver"] == "d")
    assert counted == 6  # three finishes changed a cycle, in each way of writing


@pytest.mark.postgres
def test_a_cycle_stored_meanwhile_by_a_writer_without_its_lock_is_not_lost(pg_url: str) -> None:
    """A batch holds back the insert of a cycle it found not stored; a writer that takes no
    lock stores that cycle before the batch writes. The batch is rolled back and its writes
    run alone: the begin is answered as a retry of the stored row, which is stored once."""
    from sqlalchemy.dialects.postgresql import insert

    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade

    migrate_by_copy(pg_url)  # a copy of the migrated template: `upgrade` finds it at head
    engine = make_engine(pg_url)
    upgrade(engine)
    g = GroupCommit(
        engine,
        expected=(ingest.ConflictError,),
        threads=1,
        prefetch=cycle_rows.prefetch,
        deferred=cycle_rows.deferred,
    )
    g.start()
    try:
        now = utcnow()
        b = ingest.CycleBegin(cycle_id="meanwhile", driver="d")

        def lockless(db: Session) -> str:  # another connection, committed before the batch is
            raw = {"begin": {"cycle_id": "meanwhile"}}
            row = dict(
                cycle_id="meanwhile", driver="d", started_at=now, updated_at=now, start_synthesised=False
            )
            with engine.begin() as conn:
                conn.execute(insert(Cycle.__table__).values(**row, raw=raw).on_conflict_do_nothing())  # type: ignore[attr-defined]
            return "stored"

        release, held = hold_commit(g)
        begun = g.submit(lambda db: ingest.begin_clean(db, b, now), ingest.cycle_lock_keys(b), ["meanwhile"])
        other = g.submit(lockless, (), ["unrelated"])
        release.set()
        held.result(30)
        row, created = begun.result(30)
        assert other.result(30) == "stored"
        assert (row.cycle_id, created) == ("meanwhile", False)  # a retry of what is stored
        with session_scope(engine, write=False) as db:
            stored = db.exec(select(Cycle).where(Cycle.cycle_id == "meanwhile")).all()
        assert len(stored) == 1 and stored[0].id is not None
    finally:
        g.close()
        engine.dispose()


@pytest.mark.postgres
def test_a_batch_reads_its_rows_by_index_however_young_the_table_was(pg_url: str) -> None:
    """The batch read is planned as it runs. Prepared while the table was young (where a scan
    of the table is the cheaper plan), its plan was kept as the table grew: a scan of the
    whole table every batch, until the first ANALYZE."""
    from sqlalchemy import text

    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade

    add = text(
        "INSERT INTO cycle (cycle_id, driver, started_at, start_synthesised, updated_at) "
        "SELECT 'c' || i, 'd', now(), false, now() "
        "FROM generate_series(CAST(:a AS int), CAST(:b AS int)) AS i"
    )
    scans = text("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'cycle'")
    migrate_by_copy(pg_url)  # a copy of the migrated template: `upgrade` finds it at head
    engine = make_engine(pg_url)
    upgrade(engine)
    try:
        n = 0
        for _ in range(40):  # batches of 16 new cycles, each read first, as ingestion does
            with session_scope(engine) as db:
                db.connection().execute(add, {"a": n + 1, "b": n + 16})
                cycle_rows.prefetch(db, [f"c{i}" for i in range(n + 1, n + 17)])
                n += 16
        with session_scope(engine) as db:
            db.connection().execute(add, {"a": n + 1, "b": n + 20_000})
        with session_scope(engine) as db:
            before = db.connection().execute(scans).scalar_one()
            cycle_rows.prefetch(db, [f"c{i}" for i in range(1, 17)])
            assert db.connection().execute(scans).scalar_one() == before
            assert cycle_rows.read(db, "c7") is not None
    finally:
        engine.dispose()
