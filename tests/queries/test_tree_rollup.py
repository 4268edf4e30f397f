"""The dearest trees of a window, read from the tree sums each root keeps, answer what summing
every session of every root of the window answers: after index writes one by one and in bulk,
re-archives, removals, in any order, for any window and length; `octel doctor` finds kept
sums that drifted and the repair mends them; the migration fills them on both engines."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from memory_store import memory_store
from spend_ops import BASE, SESSIONS, apply_op, record, window
from sqlalchemy import func, text, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from telemetry.queries import top_spend
from telemetry.queries.top_spend import most_expensive_trees, session_window
from telemetry.services.spend.spend_repair import check_spend, rebuild_spend
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

_MINUTES = st.integers(0, 5 * 24 * 60)
_RECORD = st.builds(
    record,
    st.sampled_from(SESSIONS),
    label=st.none(),
    minutes=st.one_of(st.none(), _MINUTES),
    tokens=st.integers(0, 9000),
    agent=st.sampled_from(["build", "plan"]),
    source=st.sampled_from(["opencode", "claude_code"]),
)
_OPS = st.one_of(
    st.tuples(st.just("index"), st.lists(_RECORD, min_size=1, max_size=3), st.none()),
    st.tuples(st.just("batch"), st.lists(_RECORD, min_size=1, max_size=3), st.none()),
    st.tuples(st.just("remove"), st.sampled_from(SESSIONS)),
)
_WINDOW = st.tuples(st.one_of(st.none(), _MINUTES), st.one_of(st.none(), _MINUTES))


def summed_trees(db: Session, since: datetime | None, until: datetime | None, limit: int) -> list[Any]:
    """The definition: roots of the window by the sums over every row naming them as root."""
    si = SessionIndex
    roots = select(col(si.session_id)).where(
        col(si.parent_session_id).is_(None), *session_window(since, until)
    )
    tokens = (
        col(si.tokens_input)
        + col(si.tokens_output)
        + col(si.tokens_reasoning)
        + col(si.tokens_cache_read)
        + col(si.tokens_cache_write)
    )
    agg = (
        select(
            col(si.root_session_id).label("root"),
            func.sum(col(si.cost_usd)).label("cost"),
            func.count().label("n"),
            func.sum(tokens).label("tokens"),
        )
        .where(col(si.root_session_id).in_(roots))
        .group_by(col(si.root_session_id))
        .subquery("t")
    )
    stmt = (
        select(col(si.session_id), agg.c.cost, agg.c.n, agg.c.tokens)
        .join(agg, agg.c.root == col(si.session_id))
        .order_by(agg.c.cost.desc(), col(si.id).desc())
        .limit(limit)
    )
    return [(sid, round(float(c), 6), int(n), int(t)) for sid, c, n, t in db.exec(stmt).all()]


def kept_trees(db: Session, since: datetime | None, until: datetime | None, limit: int) -> list[Any]:
    got = most_expensive_trees(db, since, until, limit)
    return [(t.session_id, t.subtree_cost_usd, t.subtree_session_count, t.subtree_tokens) for t in got]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(_OPS, min_size=1, max_size=14),
    st.lists(_WINDOW, min_size=1, max_size=4),
    st.integers(1, 3),
    st.sampled_from([1, 2, 2000]),
)
def test_the_kept_tree_sums_answer_what_the_sessions_answer(
    ops: list[tuple[Any, ...]], windows: list[Any], limit: int, candidates: int
) -> None:
    with memory_store() as engine:
        for op in ops:
            apply_op(engine, op)
        # few candidates: the read from the dearest down, and its fall back to the window's rows
        with (
            session_scope(engine, write=False) as db,
            mock.patch.object(top_spend, "_CANDIDATES", candidates),
        ):
            assert check_spend(db).ok
            for w in [(None, None), *windows]:
                since, until = window(w)
                assert kept_trees(db, since, until, limit) == summed_trees(db, since, until, limit)


def _tree(engine: Engine, minutes: int, tokens: tuple[int, int]) -> None:
    apply_op(
        engine,
        (
            "batch",
            [
                record("s0", label=None, minutes=minutes, tokens=tokens[0], agent="build", source="opencode"),
                record(
                    "s2", label=None, minutes=minutes + 5, tokens=tokens[1], agent="plan", source="opencode"
                ),
            ],
            None,
        ),
    )


def test_a_child_archived_later_and_a_removed_child_move_their_root(engine: Engine) -> None:
    apply_op(
        engine,
        (
            "index",
            [record("s1", label=None, minutes=30, tokens=5000, agent="build", source="opencode")],
            None,
        ),
    )
    # the child first, its root later: the root's row sums the child it finds
    apply_op(
        engine,
        ("index", [record("s2", label=None, minutes=65, tokens=8000, agent="plan", source="opencode")], None),
    )
    apply_op(
        engine,
        ("index", [record("s0", label=None, minutes=60, tokens=100, agent="build", source="opencode")], None),
    )
    with session_scope(engine, write=False) as db:
        assert [t[0] for t in kept_trees(db, None, None, 10)] == ["s0", "s1"]
        assert kept_trees(db, None, None, 10)[0][2] == 2
        assert kept_trees(db, None, None, 10) == summed_trees(db, None, None, 10)
        # a window holding the child's time but not its root's: the root's time decides
        assert [t[0] for t in kept_trees(db, BASE + timedelta(minutes=62), None, 10)] == []
    apply_op(engine, ("remove", "s2"))  # retention takes the child: the tree is cheaper
    with session_scope(engine, write=False) as db:
        assert [t[0] for t in kept_trees(db, None, None, 10)] == ["s1", "s0"]
        assert kept_trees(db, None, None, 10) == summed_trees(db, None, None, 10)
        assert check_spend(db).ok


def test_the_doctor_finds_a_drifted_tree_sum_and_the_repair_mends_it(engine: Engine) -> None:
    _tree(engine, 60, (100, 9000))
    with session_scope(engine) as db:  # a write that bypassed the services
        db.exec(update(SessionIndex).where(col(SessionIndex.session_id) == "s0").values(tree_cost_usd=0.0))
    with session_scope(engine, write=False) as db:
        health = check_spend(db)
        assert not health.ok and health.wrong_trees == ["s0"]
    with session_scope(engine) as db:
        assert rebuild_spend(db)["trees_changed"] == 1
    with session_scope(engine, write=False) as db:
        assert check_spend(db).ok
        assert kept_trees(db, None, None, 10) == summed_trees(db, None, None, 10)


def test_the_migration_fills_the_tree_sums_of_a_store_that_had_none(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        upgrade(engine, "0014")
        with engine.begin() as conn:
            for sid, root, parent, cost in (
                ("r", "r", None, 1.5),
                ("c", "r", "r", 2.25),
                ("x", "x", None, 0.5),
            ):
                conn.execute(
                    text(
                        "INSERT INTO session_index (session_id, root_session_id, parent_session_id, depth, "
                        "archived_at, source, cost_mismatch, turn_count, message_count, in_flight, "
                        "tokens_input, tokens_output, tokens_reasoning, tokens_cache_read, "
                        "tokens_cache_write, "
                        "cost_usd, subtree_tokens, subtree_cost_usd, subtree_session_count, verdict, "
                        "finding_count, walk_error_count, archive_path, schema_version, content_hash, "
                        "counted_tokens_input, counted_tokens_output, counted_tokens_reasoning, "
                        "counted_tokens_cache_read, counted_tokens_cache_write, counted_cost_usd) VALUES "
                        "(:s, :r, :p, 0, :at, 'opencode', false, 1, 1, false, 10, 1, 0, 0, 0, :c, 0, 0, 1, "
                        "'healthy', 0, 0, :s, 2, 'h', 0, 0, 0, 0, 0, 0)"
                    ),
                    {"s": sid, "r": root, "p": parent, "c": cost, "at": "2026-11-10 00:00:00.000000"},
                )
        upgrade(engine)
        with session_scope(engine, write=False) as db:
            assert kept_trees(db, None, None, 10) == [("r", 3.75, 2, 22), ("x", 0.5, 1, 11)]
            assert check_spend(db).wrong_trees == []  # (rows written past the services: no daily sums)
    finally:
        engine.dispose()
