"""The session list, one session and its tree, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from sqlalchemy.engine import Engine
from storeseed import T0, add, seed_fleet, session

from telemetry.queries.models import TreeNode
from telemetry.queries.paging import CursorError
from telemetry.queries.sessions import SessionFilter, get_session, list_sessions, session_tree
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade


def _dump(tree: TreeNode | None) -> dict[str, Any]:
    assert tree is not None
    return tree.model_dump()


def _ids(engine: Engine, f: SessionFilter) -> list[str]:
    with session_scope(engine, write=False) as db:
        return [s["session_id"] for s in list_sessions(db, f).model_dump()["items"]]


def test_list_is_newest_archived_first_with_filters(engine: Engine) -> None:
    seed_fleet(engine)
    assert _ids(engine, SessionFilter()) == [
        "ses_other",
        "ses_root",
        "ses_child_b",
        "ses_child_a",
        "ses_grand",
        "ses_old",
    ]
    assert _ids(engine, SessionFilter(agent="general")) == ["ses_child_a", "ses_grand"]
    assert _ids(engine, SessionFilter(model="openai/gpt-5", root_only=True)) == ["ses_other", "ses_old"]
    assert _ids(engine, SessionFilter(verdict="stuck")) == ["ses_child_a"]
    assert _ids(engine, SessionFilter(label="review")) == ["ses_root", "ses_child_a"]
    assert _ids(engine, SessionFilter(since=T0, until=T0 + timedelta(hours=3))) == [
        "ses_child_b",
        "ses_child_a",
        "ses_grand",
    ]
    assert _ids(engine, SessionFilter(root_only=True)) == ["ses_other", "ses_root", "ses_old"]


def test_text_search_matches_title_or_label_and_escapes_wildcards(engine: Engine) -> None:
    seed_fleet(engine)
    add(engine, session("ses_pct", title="100% done", archived_at=T0 - timedelta(days=9)))
    assert _ids(engine, SessionFilter(q="FLAKY")) == ["ses_root"]
    assert _ids(engine, SessionFilter(q="implement")) == ["ses_other"]  # title and label both match
    assert _ids(engine, SessionFilter(q="subagent", agent="general")) == ["ses_child_a", "ses_grand"]
    assert _ids(engine, SessionFilter(q="%")) == ["ses_pct"]
    assert _ids(engine, SessionFilter(q="_")) == []


def test_item_shape(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        item = list_sessions(db, SessionFilter(q="flaky")).model_dump()["items"][0]
    assert item["tokens"] == {
        "input": 1000,
        "output": 500,
        "reasoning": 100,
        "cache_read": 3000,
        "cache_write": 200,
    }
    assert item["tokens_total"] == 4800
    assert item["archived_at"] == "2026-11-01T15:00:00+00:00"
    assert (item["agent"], item["verdict"], item["cost_usd"]) == ("build", "healthy", 0.5)


def test_bad_cursor_raises_cursor_error(engine: Engine) -> None:
    with session_scope(engine, write=False) as db, pytest.raises(CursorError):
        list_sessions(db, SessionFilter(cursor="not-a-cursor"))


@pytest.fixture(scope="module")
def paging_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """Many rows sharing archive times, so ties on archived_at are broken by id."""
    eng = make_engine(f"sqlite:///{tmp_path_factory.mktemp('paging') / 'octel.db'}")
    upgrade(eng)
    rows = [
        session(
            f"ses_{i:03d}",
            agent=("a", "b", "c")[i % 3],
            archived_at=T0 + timedelta(minutes=i // 4),
            title=f"task {i}",
        )
        for i in range(90)
    ]
    add(eng, *rows)
    return eng


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(page=st.integers(min_value=1, max_value=40), agent=st.sampled_from([None, "a", "b"]))
def test_paging_visits_every_row_once_in_order(paging_engine: Engine, page: int, agent: str | None) -> None:
    everything = _ids(paging_engine, SessionFilter(agent=agent, limit=500))
    seen: list[str] = []
    cursor = None
    with session_scope(paging_engine, write=False) as db:
        while True:
            got = list_sessions(db, SessionFilter(agent=agent, limit=page, cursor=cursor)).model_dump()
            assert len(got["items"]) <= page
            seen += [s["session_id"] for s in got["items"]]
            cursor = got["next_cursor"]
            if cursor is None:
                break
    assert seen == everything
    assert len(set(seen)) == len(seen) == (90 if agent is None else 30)


@pytest.mark.parametrize(
    "f",
    [
        SessionFilter(),
        SessionFilter(agent="a", q="task"),
        SessionFilter(model="m", verdict="stuck", root_only=True),
        SessionFilter(verdict="stuck", since=T0, until=T0 + timedelta(days=1)),
        SessionFilter(label="review", q="x"),
        SessionFilter(q="x", root_only=True, cursor=None),
    ],
)
def test_sqlite_plan_walks_an_index_without_sorting(paging_engine: Engine, f: SessionFilter) -> None:
    """The page must come straight off an index in order, or 100,000 rows would be sorted. (A
    text search sends several statements: none may sort; its final read takes the page's rows
    by id.)"""
    captured: list[str] = []

    def grab(conn, cursor, statement, params, context, executemany):  # type: ignore[no-untyped-def]
        if statement.lstrip().upper().startswith("SELECT") and "session_index" in statement:
            captured.append(statement)
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).fetchall()
            captured.append(" | ".join(str(r[-1]) for r in rows))

    event.listen(paging_engine, "before_cursor_execute", grab)
    try:
        with session_scope(paging_engine, write=False) as db:
            list_sessions(db, f)
    finally:
        event.remove(paging_engine, "before_cursor_execute", grab)
    plans = captured[1::2]
    assert not [p for p in plans if "TEMP B-TREE" in p], captured
    assert [p for p in plans if "INDEX ix_session_index_" in p], captured


def test_tree_nests_children_and_rolls_cost_up(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        tree = _dump(session_tree(db, "ses_root"))
        sub = _dump(session_tree(db, "ses_child_a"))
        assert session_tree(db, "nope") is None
    assert tree is not None and sub is not None
    assert [c["session_id"] for c in tree["children"]] == ["ses_child_a", "ses_child_b"]
    assert tree["children"][0]["children"][0]["session_id"] == "ses_grand"
    assert tree["cost_usd"] == 0.5
    assert tree["subtree_cost_usd"] == pytest.approx(0.76)
    assert tree["subtree_session_count"] == 4
    assert tree["subtree_tokens"]["input"] == 1460
    assert sub["subtree_cost_usd"] == pytest.approx(0.21)
    assert [c["session_id"] for c in sub["children"]] == ["ses_grand"]


def test_tree_survives_parent_links_that_loop(engine: Engine) -> None:
    add(
        engine,
        session("x1", root_session_id="r", parent_session_id="x2", cost_usd=1.0),
        session("x2", root_session_id="r", parent_session_id="x1", cost_usd=2.0),
    )
    with session_scope(engine, write=False) as db:
        tree = _dump(session_tree(db, "x1"))
    assert tree is not None
    assert tree["subtree_cost_usd"] == 3.0
    assert tree["children"][0]["children"] == []


def test_get_session_has_record_findings_tree_and_links(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        got = get_session(db, "ses_child_a")
        assert get_session(db, "nope") is None
    assert got is not None
    assert got.session.agent == "general"
    assert (got.parent_session_id, got.root_session_id) == ("ses_root", "ses_root")
    assert [(f.detector, f.verdict, f.start_index) for f in got.findings] == [("doom_loop", "stuck", 4)]
    assert got.tree.session_id == "ses_child_a"
    assert got.tree.subtree_cost_usd == pytest.approx(0.21)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    page=st.integers(min_value=1, max_value=12),
    verdict=st.sampled_from([None, "stuck"]),
    q=st.sampled_from([None, "task 1"]),
)
def test_paging_on_both_stores(engine: Engine, page: int, verdict: str | None, q: str | None) -> None:
    with session_scope(engine, write=False) as db:
        empty = not list_sessions(db, SessionFilter(limit=1)).model_dump()["items"]
    if empty:  # seeded once per store; every example reads the same rows
        add(
            engine,
            *(
                session(
                    f"ses_{i:03d}",
                    verdict="stuck" if i % 3 == 0 else "healthy",
                    archived_at=T0 + timedelta(minutes=i // 5),
                    title=f"task {i}",
                )
                for i in range(40)
            ),
        )
    f = SessionFilter(verdict=verdict, q=q, limit=500)
    everything = _ids(engine, f)
    seen: list[str] = []
    cursor = None
    with session_scope(engine, write=False) as db:
        while True:
            got = list_sessions(
                db, SessionFilter(verdict=verdict, q=q, limit=page, cursor=cursor)
            ).model_dump()
            seen += [s["session_id"] for s in got["items"]]
            cursor = got["next_cursor"]
            if cursor is None:
                break
    assert seen == everything and len(set(seen)) == len(seen)
    expected = 40 if verdict is None else 14
    assert len(seen) == (
        expected
        if q is None
        else len([i for i in range(40) if "task 1" in f"task {i}" and (verdict is None or i % 3 == 0)])
    )
