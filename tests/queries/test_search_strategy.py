"""A text search page asks the text index first for a rare text, else walks the newest rows,
then asks the text index: whatever the words, the data, the filters, the page size, how far the
walk may go and which way is taken, the pages are the plain query's."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import col, delete, select
from storeseed import T0, add, session

from telemetry.queries import session_search
from telemetry.queries.sessions import SessionFilter, list_sessions
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

# ASCII letters in both cases, a digit, separators between words, LIKE's own characters, FTS5's
# quote, and letters whose case only Unicode folds (FTS5 folds them, the predicate does not):
# every kind of run of three characters the text index may be asked for.
ALPHABET = "abcAB1 -_%\"'éÉ\u212a"
TEXT = st.text(ALPHABET, max_size=10)
ROWS = st.lists(
    st.tuples(st.none() | TEXT, st.none() | TEXT, st.sampled_from(["x", "y"]), st.integers(0, 6)),
    min_size=0,
    max_size=25,
)


def _plain(engine: Engine, q: str, agent: str | None) -> list[str]:
    """The reference: every filter and the predicate in one query, ordered, no index trick."""
    where = [session_search.contains_text(q)]
    if agent is not None:
        where.append(col(SessionIndex.agent) == agent)
    order = (col(SessionIndex.archived_at).desc(), col(SessionIndex.id).desc())
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(SessionIndex.session_id).where(*where).order_by(*order)).all())


def _paged(engine: Engine, q: str, agent: str | None, page: int) -> list[str]:
    seen: list[str] = []
    cursor = None
    with session_scope(engine, write=False) as db:
        while True:
            got = list_sessions(db, SessionFilter(q=q, agent=agent, limit=page, cursor=cursor))
            seen += [s.session_id for s in got.items]
            cursor = got.next_cursor
            if cursor is None:
                return seen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=ROWS,
    q=st.text(ALPHABET, min_size=1, max_size=5),
    agent=st.none() | st.just("x"),
    page=st.integers(1, 6),
    budget=st.integers(1, 8),
    probe=st.integers(1, 8),
    probe_more=st.integers(1, 8),
    rare=st.sampled_from([0, 10**9]),
)
def test_pages_are_the_plain_querys(
    engine: Engine,
    rows: list[tuple[str | None, str | None, str, int]],
    q: str,
    agent: str | None,
    page: int,
    budget: int,
    probe: int,
    probe_more: int,
    rare: int,
) -> None:
    with session_scope(engine) as db:
        db.exec(delete(SessionIndex))  # type: ignore[call-overload]
    # Few distinct times, so many rows tie on archived_at and the id decides their order.
    add(
        engine,
        *(
            session(f"ses_{i}", title=t, label=lab, agent=a, archived_at=T0 + timedelta(seconds=s))
            for i, (t, lab, a, s) in enumerate(rows)
        ),
    )
    # `rare`: PostgreSQL's index goes first always (10**9) or never (0).
    patched = {"WALK_BUDGET": budget, "PROBE": probe, "PROBE_MORE": probe_more, "RARE_ROWS": rare}
    with mock.patch.multiple(session_search, **patched):
        assert _paged(engine, q, agent, page) == _plain(engine, q, agent)


def test_a_rare_word_past_the_walk_is_found_through_the_index(engine: Engine) -> None:
    """A match older than the walk's reach comes from the text index, in order, once."""
    add(
        engine,
        *(
            session(f"ses_{i:02d}", title=f"routine {i}", archived_at=T0 + timedelta(minutes=i))
            for i in range(30)
        ),
        session("ses_old", title="Flaky Parser", archived_at=T0 - timedelta(days=1)),
        session("ses_new", title="the flaky parser again", archived_at=T0 + timedelta(days=1)),
    )
    with mock.patch.multiple(session_search, WALK_BUDGET=5, PROBE=1, RARE_ROWS=0):
        assert _paged(engine, "flaky parser", None, 1) == ["ses_new", "ses_old"]
        assert _paged(engine, "no such words", None, 3) == []


def test_a_text_finds_itself_whatever_its_letters(engine: Engine) -> None:
    """Title and text are lowered by the same function, so typing a title finds it."""
    add(
        engine,
        session("ses_upper", title="Élan vital", archived_at=T0),
        session("ses_lower", title="élan VITAL", archived_at=T0 + timedelta(minutes=1)),
    )
    # (Whether É also finds é is the database's lower(): not on SQLite, in a PostgreSQL locale.)
    assert "ses_upper" in _paged(engine, "Élan vital", None, 5)
    assert "ses_lower" in _paged(engine, "élan vital", None, 5)
    assert _paged(engine, "LAN VITAL", None, 5) == ["ses_lower", "ses_upper"]


@pytest.mark.postgres
def test_right_after_the_upgrade_postgresql_knows_a_common_word_is_common(pg_url: str) -> None:
    """The text index of 0017 goes first only for a text the planner expects on few rows; a store
    upgraded with its sessions already in it must not be taken for one where every text is rare
    (a word on 1 session in 5 was read whole from the index: 220 ms a page instead of 7)."""
    engine = make_engine(pg_url)
    try:
        upgrade(engine, "0016")
        words = ("parser crash", "routine docs")
        add(engine, *(session(f"ses_{i:05d}", title=words[i % 2]) for i in range(2_000)))
        upgrade(engine)
        with session_scope(engine, write=False) as db:
            pattern = session_search._candidates("postgresql", "parser")
            expected = session_search._estimate(db, select(SessionIndex.id).where(pattern))
        assert expected >= 500  # 1,000 rows hold it; with no statistics the planner says 25 or fewer
    finally:
        engine.dispose()
