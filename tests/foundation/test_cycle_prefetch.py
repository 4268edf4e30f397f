"""A batch of cycle writes reads the stored rows of the cycles it finishes in one statement
(`cycle_rows.prefetch`): every write of the batch gets the answer, and leaves the row, it
would have written alone, whatever else the same batch wrote to the same cycle first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from commit_hold import hold_commit
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from telemetry.queries.cycles import cycle_dict
from telemetry.services import cycle_rows, ingest
from telemetry.services.group_commit import GroupCommit
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
    g = GroupCommit(engine, expected=(ingest.ConflictError,), threads=1, prefetch=cycle_rows.prefetch)
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
            (c.cycle_id.removeprefix(prefix), c.driver, c.ended_at is None, c.start_synthesised,
             c.terminal_state, c.processed_count, sorted(c.raw or {}))
            for c in rows
        )  # fmt: skip


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
        alone.append(_answer("alone-", commit.submit(fn, keys, ["alone-" + cid] if what == "finish" else [])))
    release, held = hold_commit(commit)
    batches = commit.batches
    futures = []
    for what, cid, driver in _BATCH:
        fn, keys = _write("batch-", what, cid, driver)
        futures.append(commit.submit(fn, keys, ["batch-" + cid] if what == "finish" else []))
    release.set()
    held.result(30)
    together = [_answer("batch-", f) for f in futures]
    assert commit.batches == batches + 2  # the held write, then the batch in one transaction
    assert together == alone
    assert _rows(engine, "batch-") == _rows(engine, "alone-")
    with session_scope(engine, write=False) as db:
        counted = sum(v for m, labels, v in read_all(db) if m == "cycles_total" and labels["driver"] == "d")
    assert counted == 6  # three finishes changed a cycle, in each way of writing
