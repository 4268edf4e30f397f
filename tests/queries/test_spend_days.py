"""The daily spend summary answers what every session of the window answers: any window, any
grouping, after index writes, re-archives, cycles that arrive before or after their sessions,
removals and pruned cycles, in any order."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_store import memory_store
from spend_ops import BASE, CYCLES, SESSIONS, apply_op, assert_same, record, window
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import col

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.spend_read import recomputed_records, window_groupings, window_records
from telemetry.queries.spend_record import FINE_KEYS, SpendRecord, fold
from telemetry.services.spend.spend_repair import check_spend, rebuild_spend
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

_MINUTES = st.integers(0, 5 * 24 * 60)
_RECORD = st.builds(
    record,
    st.sampled_from(SESSIONS),
    label=st.sampled_from([None, "c0", "c1", "fix-7"]),
    minutes=st.one_of(st.none(), _MINUTES),
    tokens=st.integers(0, 9000),
    agent=st.sampled_from(["build", "plan"]),
    source=st.sampled_from(["opencode", "claude_code"]),
)
_OPS = st.one_of(
    st.tuples(st.just("index"), st.lists(_RECORD, min_size=1, max_size=3), st.sampled_from([None, *CYCLES])),
    st.tuples(st.just("batch"), st.lists(_RECORD, min_size=1, max_size=3), st.none()),
    st.tuples(st.just("begin"), st.sampled_from(CYCLES), st.sampled_from([None, *SESSIONS]), _MINUTES),
    st.tuples(st.just("finish"), st.sampled_from(CYCLES), st.sampled_from([None, *SESSIONS])),
    st.tuples(st.just("remove"), st.sampled_from(SESSIONS)),
    st.tuples(st.just("prune_cycle"), st.sampled_from(CYCLES)),
)
_WINDOW = st.tuples(st.one_of(st.none(), _MINUTES), st.one_of(st.none(), _MINUTES))


def assert_folded(got: list[SpendRecord], want: list[SpendRecord], keys: list[str]) -> None:
    def key(r: SpendRecord) -> tuple[Any, ...]:
        return (r.source, *(r.key(k) for k in keys))

    g, w = {key(r): r for r in got if r.count}, {key(r): r for r in want if r.count}
    assert g.keys() == w.keys()
    for k, r in w.items():
        sums = (*TOKEN_KINDS, "count")
        assert [getattr(g[k], t) for t in sums] == [getattr(r, t) for t in sums], k
        assert math.isclose(g[k].cost_usd, r.cost_usd, rel_tol=1e-9, abs_tol=1e-9), k


@settings(max_examples=80, deadline=None)
@given(st.lists(_OPS, min_size=1, max_size=14), st.lists(_WINDOW, min_size=1, max_size=4))
def test_the_summary_answers_what_the_sessions_answer(ops: list[tuple[Any, ...]], windows: list[Any]) -> None:
    with memory_store() as engine:
        for op in ops:
            apply_op(engine, op)
        with session_scope(engine, write=False) as db:
            assert check_spend(db, drivers=True).ok
            for w in [(None, None), *windows]:
                since, until = window(w)
                want = recomputed_records(db, since, until)
                assert_same(window_records(db, since, until), want)
                # the Costs page's one statement: each grouping summed in the database
                sets = [list(FINE_KEYS), ["agent"], ["day", "model"], []]
                for keys, got in zip(sets, window_groupings(db, since, until, sets), strict=True):
                    assert_folded(got, fold(want, keys), keys)


def test_a_cycle_that_arrives_after_its_session_moves_its_spend_to_its_driver(engine: Engine) -> None:
    apply_op(
        engine,
        ("index", [record("s0", label=None, minutes=60, tokens=100, agent="build", source="opencode")], None),
    )
    since, until = BASE, BASE + timedelta(days=1)
    with session_scope(engine, write=False) as db:
        assert [r.driver for r in window_records(db, since, until)] == [None]
    apply_op(engine, ("finish", "c1", "s0"))  # the dispatcher names the session at its finish
    with session_scope(engine, write=False) as db:
        assert [(r.driver, r.count) for r in window_records(db, since, until)] == [("review", 1)]
        assert check_spend(db, drivers=True).ok
    apply_op(engine, ("prune_cycle", "c1"))
    with session_scope(engine, write=False) as db:
        assert [r.driver for r in window_records(db, since, until)] == [None]


def test_the_check_finds_a_summary_that_drifted_and_the_repair_mends_it(engine: Engine) -> None:
    apply_op(
        engine,
        ("index", [record("s0", label="c0", minutes=60, tokens=100, agent="build", source="opencode")], None),
    )
    apply_op(engine, ("begin", "c0", None, 10))
    with session_scope(engine) as db:  # a write that bypassed the services
        db.exec(delete(SessionIndex).where(col(SessionIndex.session_id) == "s0"))
    with session_scope(engine, write=False) as db:
        health = check_spend(db)
        assert not health.ok and len(health.wrong) == 1
    with session_scope(engine) as db:
        assert rebuild_spend(db)["groups"] == 0
    with session_scope(engine, write=False) as db:
        assert check_spend(db, drivers=True).ok
