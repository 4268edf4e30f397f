"""Content search pages are the plain rule's answer on both engines: whatever the texts, the
words, the page size and the FTS5 window (shrunk here so pages span many windows), paging
through `search` gives every part whose text holds each word (ASCII case folded), newest first."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlalchemy.engine import Engine

from archiver.content import ContentPart
from telemetry.queries import content_search
from telemetry.queries.content_search import SearchRequest, search
from telemetry.services.index.content_index import put_parts
from telemetry.store.db import session_scope
from telemetry.store.search_models import SearchPart

# "İSTANBUL": lowering it moves its characters, so the index is asked for its first and last runs
WORDS = ["push", "Push", "force", "git", "ab", "ECONN", "a-b", "x_y", "%", "é", "İSTANBUL"]
BODY = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


def _low(s: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in s)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(BODY, min_size=1, max_size=30),
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=2),
    page=st.integers(1, 4),
)
def test_pages_are_the_rule_on_both_engines(
    engine: Engine, bodies: list[str], words: list[str], page: int
) -> None:
    with session_scope(engine) as db:
        db.exec(delete(SearchPart))  # type: ignore[call-overload]
        put_parts(
            db, {f"ses_{i:03d}": [ContentPart(0, 0, "text", None, None, b)] for i, b in enumerate(bodies)}
        )
    want = [
        f"ses_{i:03d}" for i, b in reversed(list(enumerate(bodies))) if all(_low(w) in _low(b) for w in words)
    ]
    got: list[str] = []
    cursor = None
    with (
        mock.patch.object(content_search, "PROBE", 2),
        mock.patch.object(content_search, "PROBE_MAX", 4),
        session_scope(engine, write=False) as db,
    ):
        while True:
            answer = search(db, SearchRequest(q=" ".join(words), limit=page, cursor=cursor))
            got += [h.session_id for h in answer.hits]
            cursor = answer.next_cursor
            if cursor is None:
                break
    assert got == want
