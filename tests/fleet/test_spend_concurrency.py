"""Two instances on one PostgreSQL write the index rows and the cycles that name them at the
same moment: the daily spend summary still equals what the sessions and their cycles say."""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from spend_ops import CYCLES, SESSIONS, apply_op, assert_same, record

from telemetry.queries.spend_read import recomputed_records, window_records
from telemetry.services.spend.spend_repair import check_spend
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade

pytestmark = pytest.mark.postgres

THREADS, ROUNDS = 8, 12


def _ops(rnd: random.Random) -> list[tuple[Any, ...]]:
    """A writer's round: archives naming cycles (one session, or several of a tree in one
    write, in any order), cycles naming sessions, removals."""
    out: list[tuple[Any, ...]] = []
    for _ in range(4):
        sid, cid = rnd.choice(SESSIONS), rnd.choice(CYCLES)
        # no pruned cycles here: retention deletes old finished cycles, which nobody writes any more
        kind = rnd.choice(["index", "index", "batch", "begin", "finish", "remove"])
        recs = [
            record(
                s,
                label=rnd.choice([None, cid]),
                minutes=rnd.randrange(0, 3 * 24 * 60),
                tokens=rnd.randrange(0, 5000),
                agent=rnd.choice(["build", "plan"]),
                source="opencode",
            )
            for s in [sid, *rnd.sample([s for s in SESSIONS if s != sid], rnd.choice([0, 0, 1, 2]))]
        ]
        if kind == "index":
            out.append(("index", recs, rnd.choice([None, cid])))
        elif kind == "batch":
            out.append(("batch", recs, None))
        elif kind == "begin":
            out.append(("begin", cid, rnd.choice([None, sid]), rnd.randrange(0, 3 * 24 * 60)))
        elif kind == "finish":
            out.append(("finish", cid, rnd.choice([None, sid])))
        else:
            out.append((kind, sid))
    return out


def test_concurrent_writers_on_two_instances_lose_no_write_and_keep_the_summary_exact(pg_url: str) -> None:
    """No writer fails or deadlocks, and whatever the interleaving, the summary equals what
    the index rows say, each row under the driver its cycles give it: no repair needed (the
    repair is tested in tests/queries/test_spend_days.py)."""
    engines = [make_engine(pg_url), make_engine(pg_url)]
    upgrade(engines[0])
    barrier = threading.Barrier(THREADS)

    def writer(w: int) -> None:
        rnd = random.Random(w)
        for _ in range(ROUNDS):
            barrier.wait(timeout=30)  # every round starts on all writers at once
            for op in _ops(rnd):
                apply_op(engines[w % 2], op)

    try:
        with ThreadPoolExecutor(THREADS) as pool:
            futures = [pool.submit(writer, w) for w in range(THREADS)]
        errors = [f.exception() for f in futures if f.exception() is not None]
        # a writer that failed (a deadlock, a lost write) leaves the others at the barrier
        first = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)] or errors
        if first:
            raise first[0]
        with session_scope(engines[1], write=False) as db:
            health = check_spend(db, drivers=True)
            got, want = window_records(db, None, None), recomputed_records(db, None, None)
    finally:
        for e in engines:
            e.dispose()
    assert health.ok, health
    assert_same(got, want)
