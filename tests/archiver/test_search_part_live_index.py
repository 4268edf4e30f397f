"""The index of parts read from live messages holds those alone (migration 0028), on SQLite and
a real PostgreSQL: a store with archived and live parts upgrades and downgrades with every part
kept; the watcher still finds and removes its live parts by id; and the read of a session's
archived parts, which the catch-up makes before it replaces them, goes by the session's own
rows, not the whole store's archived parts (which the full index made SQLite read, having no
statistics to tell it otherwise)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.engine import Engine
from sqlmodel import select
from store_revisions import to_revision

from archiver.content import ContentPart
from telemetry.services.index.content_index import put_live_parts, put_parts, remove_live_parts
from telemetry.store import migrate
from telemetry.store.db import make_engine, session_scope
from telemetry.store.search_models import SearchPart


def _partial(engine: Engine) -> bool:
    """Whether `ix_search_part_live` holds some rows only (has a WHERE)."""
    with engine.connect() as c:
        if engine.dialect.name == "sqlite":
            flags = {r[1]: r[4] for r in c.exec_driver_sql('PRAGMA index_list("search_part")')}
            return bool(flags["ix_search_part_live"])
        made = c.execute(text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_search_part_live'"))
        return " WHERE " in made.scalar_one()


def _parts(engine: Engine) -> list[tuple[str, str, int | None]]:
    with session_scope(engine, write=False) as db:
        rows = db.exec(select(SearchPart).order_by(SearchPart.session_id, SearchPart.body)).all()  # type: ignore[arg-type]
        return [(p.session_id, p.body, p.live_message_id) for p in rows]


def _live(live_id: int, sid: str, turn: int, words: str) -> tuple[int, str, int, dict[str, Any]]:
    return (live_id, sid, turn, {"info": {}, "parts": [{"type": "text", "text": words}]})


def _texts(*bodies: str) -> tuple[ContentPart, ...]:
    """An archived session's parts: one text part each, in one turn."""
    return tuple(ContentPart(0, i, "text", None, None, b) for i, b in enumerate(bodies))


def test_0028_keeps_every_part_and_the_live_ones_found_by_id(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        to_revision(engine, "0027")
        with session_scope(engine) as db:
            put_parts(db, {"ses_a": _texts("archived alpha", "archived beta")})
            put_live_parts(db, [_live(7, "ses_b", 0, "live gamma")])
        before = _parts(engine)
        assert not _partial(engine)
        to_revision(engine, "head")
        assert _partial(engine)
        assert _parts(engine) == before
        with session_scope(engine) as db:  # the watcher clears its live message: that part alone goes
            remove_live_parts(db, [7])
        assert _parts(engine) == [("ses_a", "archived alpha", None), ("ses_a", "archived beta", None)]
        with session_scope(engine) as db:
            put_live_parts(db, [_live(8, "ses_b", 1, "live delta")])
            put_parts(db, {"ses_a": _texts("archived alpha", "archived epsilon")})
        after = [
            ("ses_a", "archived alpha", None),
            ("ses_a", "archived epsilon", None),
            ("ses_b", "live delta", 8),
        ]
        assert _parts(engine) == after
        to_revision(engine, "0027", down=True)
        assert not _partial(engine)
        assert _parts(engine) == after
    finally:
        engine.dispose()


def test_a_sessions_archived_parts_are_read_by_its_own_rows(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    seen: list[tuple[str, Any]] = []

    def catch(_c: Any, _cur: Any, statement: str, params: Any, _ctx: Any, _many: bool) -> None:
        if statement.lstrip().startswith("SELECT") and "live_message_id IS NULL" in statement:
            seen.append((statement, params))

    try:
        with session_scope(engine) as db:
            put_parts(db, {f"ses_{i}": _texts(f"text {i}") for i in range(50)})
        event.listen(engine, "before_cursor_execute", catch)
        with session_scope(engine) as db:  # a batch archived again: their stored parts read first
            put_parts(db, {f"ses_{i}": _texts("more") for i in range(10)})
        event.remove(engine, "before_cursor_execute", catch)
        assert len(seen) == 1
        statement, params = seen[0]
        with engine.connect() as c:
            plan = " ".join(str(r[-1]) for r in c.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params))
        assert "ix_search_part_session" in plan, plan
    finally:
        engine.dispose()


@pytest.mark.parametrize("live_ids", [[1], [1, 2, 3]])
def test_live_parts_are_removed_by_the_partial_index(sqlite_url: str, live_ids: list[int]) -> None:
    engine = make_engine(sqlite_url)
    migrate.upgrade(engine)
    try:
        with engine.connect() as c:
            marks = ", ".join("?" * len(live_ids))
            plan = c.exec_driver_sql(
                f"EXPLAIN QUERY PLAN DELETE FROM search_part WHERE live_message_id IN ({marks})",
                tuple(live_ids),
            ).all()
        assert "ix_search_part_live" in " ".join(str(r[-1]) for r in plan)
    finally:
        engine.dispose()
