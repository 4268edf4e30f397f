"""Text search through the trigram index finds exactly the case-insensitive substring matches,
and stays in step when rows are added, renamed and deleted."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import delete, select
from storeseed import T0, add, session

from telemetry.queries.sessions import SessionFilter, list_sessions
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

ALPHABET = "abcAB -_%\"'"
TITLES = st.lists(st.text(ALPHABET, max_size=12), min_size=1, max_size=12)


def _search(engine: Engine, q: str) -> set[str]:
    with session_scope(engine, write=False) as db:
        return {
            s["session_id"] for s in list_sessions(db, SessionFilter(q=q, limit=500)).model_dump()["items"]
        }


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(titles=TITLES, q=st.text(ALPHABET, min_size=1, max_size=5))
def test_search_is_the_substring_rule(engine: Engine, titles: list[str], q: str) -> None:
    with session_scope(engine) as db:
        db.exec(delete(SessionIndex))  # type: ignore[call-overload]
    add(
        engine,
        *(
            session(f"ses_{i}", title=t, label=f"L{i}", archived_at=T0 + timedelta(seconds=i))
            for i, t in enumerate(titles)
        ),
    )
    want = {f"ses_{i}" for i, t in enumerate(titles) if q.lower() in t.lower() or q.lower() in f"l{i}"}
    assert _search(engine, q) == want


def test_index_follows_updates_and_deletes(engine: Engine) -> None:
    add(engine, session("ses_a", title="flaky parser test"), session("ses_b", title="login cache"))
    assert _search(engine, "parser") == {"ses_a"}
    with session_scope(engine) as db:
        row = db.exec(select(SessionIndex).where(SessionIndex.session_id == "ses_a")).one()
        row.title = "memory leak"
        db.add(row)
    assert _search(engine, "parser") == set()
    assert _search(engine, "leak") == {"ses_a"}
    with session_scope(engine) as db:
        db.exec(delete(SessionIndex).where(SessionIndex.session_id == "ses_b"))  # type: ignore[call-overload]
    assert _search(engine, "cache") == set()
