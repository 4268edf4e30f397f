"""Content search pages are the plain rule's answer on both engines: whatever the texts, the
words, the page size and the FTS5 window (shrunk here so pages span many windows), paging
through `search` gives every part whose text holds each word (ASCII case folded), newest first.
A session's parts put again keep those unchanged and replace the rest, no hit doubled."""

from __future__ import annotations

from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import select

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


def _stored(engine: Engine) -> dict[tuple[str, int], tuple[int, str]]:
    with session_scope(engine, write=False) as db:
        rows = db.exec(select(SearchPart)).all()
    return {(p.session_id, p.message_index): (int(p.id or 0), p.body) for p in rows}


def _hits(engine: Engine, q: str) -> list[tuple[str, int]]:
    with session_scope(engine, write=False) as db:
        return [(h.session_id, h.turn) for h in search(db, SearchRequest(q=q)).hits]


def test_a_session_put_again_keeps_its_unchanged_parts_and_replaces_the_rest(engine: Engine) -> None:
    def part(turn: int, body: str, at: float | None = None) -> ContentPart:
        return ContentPart(turn, 0, "text", None, at, body)

    with session_scope(engine) as db:
        db.exec(delete(SearchPart))  # type: ignore[call-overload]
        put_parts(
            db, {"ses_a": [part(0, "alpha ECONNRESET", 1_000.0), part(1, "beta"), part(2, "gamma", 5.0)]}
        )
        put_parts(db, {"ses_b": [part(0, "beta too")]})
    before = _stored(engine)
    with session_scope(engine) as db:  # turn 0 as it was, 1 changed, 2 at another time, 3 new
        put_parts(
            db,
            {
                "ses_a": [
                    part(0, "alpha ECONNRESET", 1_000.0),
                    part(1, "beta EPIPE"),
                    part(2, "gamma", 6.0),
                    part(3, "delta"),
                ]
            },
        )
    after = _stored(engine)
    assert after[("ses_a", 0)] == before[("ses_a", 0)]  # kept as it was
    assert after[("ses_b", 0)] == before[("ses_b", 0)]  # another session: untouched
    assert after[("ses_a", 1)][1] == "beta EPIPE" and after[("ses_a", 1)][0] > before[("ses_b", 0)][0]
    assert after[("ses_a", 2)][0] not in {i for i, _ in before.values()}  # its time changed: written again
    assert len(after) == 5
    assert _hits(engine, "ECONNRESET") == [("ses_a", 0)]
    assert _hits(engine, "beta") == [("ses_a", 1), ("ses_b", 0)]  # newest written first, none twice
    assert _hits(engine, "EPIPE") == [("ses_a", 1)] and _hits(engine, "delta") == [("ses_a", 3)]
    with session_scope(engine) as db:  # put again with none: all its parts go
        put_parts(db, {"ses_a": []})
    assert _hits(engine, "ECONNRESET") == [] and _hits(engine, "beta") == [("ses_b", 0)]
