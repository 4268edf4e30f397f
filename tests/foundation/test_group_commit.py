"""The group commit behind cycle begins and finishes: writes that arrive together share one
transaction, nobody is answered before it commits, and one bad write fails only itself."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest
from commit_hold import hold_commit
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from telemetry.services.ingest import ingest
from telemetry.services.ingest.group_commit import GroupCommit
from telemetry.store.aggregates import read_all
from telemetry.store.db import make_engine, session_scope
from telemetry.store.locks import lock_keys
from telemetry.store.models import Cycle
from telemetry.timeutil import utcnow


@pytest.fixture
def commit(engine: Engine) -> Iterator[GroupCommit]:
    g = GroupCommit(engine, expected=(ingest.ConflictError,), threads=1)
    g.start()
    yield g
    g.close()


def _begin(cid: str, driver: str = "d") -> Callable[[Session], Any]:
    p = ingest.CycleBegin(cycle_id=cid, driver=driver)
    return lambda db: ingest.begin_clean(db, p, utcnow())[1]


def _finish(cid: str) -> Callable[[Session], Any]:
    p = ingest.CycleFinish(cycle_id=cid, driver="d", terminal_state="done", worker_wallclock_seconds=3.0)
    return lambda db: ingest.finish_clean(db, p, utcnow())[1]


def _stored(engine: Engine) -> set[str]:
    with session_scope(engine, write=False) as db:
        return set(db.exec(select(Cycle.cycle_id)).all())


def test_writes_that_arrive_together_share_one_commit(commit: GroupCommit, engine: Engine) -> None:
    release, held = hold_commit(commit)
    begins = [commit.submit(_begin(f"c{i}"), [f"cycle:c{i}"]) for i in range(10)]
    release.set()
    assert [f.result(30) for f in begins] == [True] * 10
    held.result(30)
    assert commit.batches == 2 and commit.members == 11  # the held write, then the ten
    assert _stored(engine) == {f"c{i}" for i in range(10)}


def test_a_conflict_fails_only_its_own_write(commit: GroupCommit, engine: Engine) -> None:
    commit.submit(_begin("taken", driver="other")).result(30)
    release, held = hold_commit(commit)
    good = [commit.submit(_begin(f"g{i}")) for i in range(3)]
    bad = commit.submit(_begin("taken", driver="d"))  # another driver's cycle id
    finishes = [commit.submit(_finish(f"g{i}")) for i in range(3)]
    release.set()
    held.result(30)
    with pytest.raises(ingest.ConflictError):
        bad.result(30)
    assert [f.result(30) for f in good] == [True] * 3
    assert [f.result(30) for f in finishes] == [True] * 3
    assert commit.batches == 3  # the batch was written together, without the conflict
    with session_scope(engine, write=False) as db:
        counted = sum(v for m, _, v in read_all(db) if m == "cycles_total")
    assert counted == 3


def test_a_write_that_breaks_the_transaction_fails_alone(commit: GroupCommit, engine: Engine) -> None:
    """A write fails after writing: the batch is rolled back and each write runs alone, so the
    others are stored once and the broken one's partial write is not."""

    def broken(db: Session) -> None:
        ingest.begin_clean(db, ingest.CycleBegin(cycle_id="half", driver="d"), utcnow())
        db.flush()
        db.connection().execute(text("SELECT * FROM no_such_table"))

    release, held = hold_commit(commit)
    good = [commit.submit(_begin(f"g{i}")) for i in range(4)]
    bad = commit.submit(broken)
    good += [commit.submit(_finish(f"g{i}")) for i in range(4)]
    release.set()
    held.result(30)
    with pytest.raises(Exception, match="no_such_table"):
        bad.result(30)
    assert [f.result(30) for f in good] == [True] * 8
    assert _stored(engine) == {f"g{i}" for i in range(4)}
    with session_scope(engine, write=False) as db:
        counted = sum(v for m, _, v in read_all(db) if m == "cycles_total")
    assert counted == 4


def test_nobody_is_answered_before_the_commit(commit: GroupCommit, store_url: str, engine: Engine) -> None:
    """Each answer, the moment it is given, is already visible to another connection; a commit
    that fails answers nobody, and the writes are made again alone."""
    other = make_engine(store_url)
    seen: dict[str, bool] = {}
    all_seen = threading.Event()
    commits = []

    def fail_first_commit(conn: Any) -> None:
        commits.append(True)
        if len(commits) == 1:  # the batch's (the held write touches no connection)
            raise RuntimeError("the commit failed")

    def check(cid: str) -> Callable[[Future[Any]], None]:
        def done(_: Future[Any]) -> None:
            seen[cid] = cid in _stored(other)
            if len(seen) == 6:
                all_seen.set()

        return done

    release, held = hold_commit(commit)
    event.listen(engine, "commit", fail_first_commit)
    try:
        futures = []
        for i in range(6):
            f = commit.submit(_begin(f"v{i}"))
            f.add_done_callback(check(f"v{i}"))
            futures.append(f)
        release.set()
        held.result(30)
        assert [f.result(30) for f in futures] == [True] * 6
        assert all_seen.wait(30)  # a future's callbacks run just after its waiters wake
    finally:
        event.remove(engine, "commit", fail_first_commit)
        other.dispose()
    assert len(commits) == 1 + 6  # the batch's commit failed; each write was then committed alone
    assert seen == {f"v{i}": True for i in range(6)}


@pytest.mark.postgres
def test_a_batch_holds_every_key_it_names_until_it_commits(pg_url: str) -> None:
    """The batch's keys, taken in one statement, are held by it: another transaction cannot
    take any of them until the batch ends. (SQLite's writers hold the whole database.)"""
    keys = [f"cycle:k{i}" for i in range(5)]
    probe = text("SELECT pg_try_advisory_xact_lock(hashtextextended(:k, 0))")
    engine, other = make_engine(pg_url), make_engine(pg_url)
    try:
        with session_scope(engine) as db:
            lock_keys(db, reversed(keys))
            with session_scope(other) as db2:
                assert [db2.connection().execute(probe, {"k": k}).scalar() for k in keys] == [False] * 5
        with session_scope(other) as db2:
            assert [db2.connection().execute(probe, {"k": k}).scalar() for k in keys] == [True] * 5
    finally:
        engine.dispose()
        other.dispose()


def test_writes_awaited_on_the_event_loop_get_their_own_answers(commit: GroupCommit, engine: Engine) -> None:
    """A batch's writes awaited with `run` are answered on the loop once it committed, each
    with its own result or error; one whose caller went away meanwhile is still written and
    takes nobody else's answer with it."""
    release, held = hold_commit(commit)

    async def main() -> tuple[list[Any], bool]:
        runs = [asyncio.create_task(commit.run(_begin(f"w{i}"), [f"cycle:w{i}"])) for i in range(3)]
        gone = asyncio.create_task(commit.run(_begin("gone"), ["cycle:gone"]))
        await asyncio.sleep(0.05)
        runs += [asyncio.create_task(commit.run(_begin(f"w{i}"), [f"cycle:w{i}"])) for i in range(3, 6)]
        runs.append(asyncio.create_task(commit.run(_begin("w0", driver="other"), ["cycle:w0"])))
        await asyncio.sleep(0.2)  # all queued behind the held write
        gone.cancel()
        release.set()
        answers = await asyncio.gather(*runs, return_exceptions=True)
        return answers, gone.cancelled()

    answers, cancelled = asyncio.run(main())
    held.result(30)
    assert answers[:6] == [True] * 6
    assert isinstance(answers[6], ingest.ConflictError)
    assert cancelled
    assert commit.batches == 2  # the held write, then the eight together
    assert _stored(engine) == {f"w{i}" for i in range(6)} | {"gone"}
