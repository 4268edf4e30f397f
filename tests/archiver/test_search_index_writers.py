"""Every way `search_part` is written keeps SQLite's FTS5 table in step with it, on SQLite and a
real PostgreSQL: archiving a tree, archiving it again, importing archives, live messages coming
and going, `octel db reindex` and pruning; after each, FTS5's own `integrity-check` (which reads
every row of `search_part` and compares it with the index) passes, and search finds what was
written. A row written behind the writers' back fails the check (so it can fail). Migration 0026
takes the per-row insert trigger off a store with data in it, which stays searchable, and puts
it back on the way down; 0027 rebuilds the FTS5 table without places, and back, every part
still found."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from archiver_fakes import FakeOpenCode, message, tree
from live_seed import store_waiting_tree
from sqlalchemy import delete, func, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DatabaseError
from sqlmodel import select
from store_revisions import to_revision
from typer.testing import CliRunner

from archiver.content import ContentPart
from archiver.redact import Redactor
from cli import app
from telemetry.archive_store import archive_store
from telemetry.archiving import ArchiveOutcome, archive_session_tree_async
from telemetry.queries.content_search import SearchRequest, search
from telemetry.services.index.archive_import import import_archives
from telemetry.services.index.content_index import put_parts
from telemetry.services.index.prune import prune
from telemetry.settings import Settings
from telemetry.store import migrate
from telemetry.store.db import make_engine, session_scope
from telemetry.store.search_models import SearchPart
from telemetry.timeutil import utcnow
from telemetry.tower.live_messages import store_live_messages
from tower.live_messages import LiveMessage, MessageBatch

V1 = Path(__file__).parent / "fixtures" / "v1_session.json"
_CHECK = "INSERT INTO session_search_parts(session_search_parts) VALUES ('integrity-check')"
_ROW = text(
    "INSERT INTO search_part (session_id, message_index, part_index, kind, body) "
    "VALUES (:s, :i, 0, 'text', :b)"
)


def _intact(engine: Engine) -> None:
    """SQLite: the FTS5 table is whole (its `integrity-check`, which on an external content
    table checks the index alone) and holds exactly the text of `search_part`: every run of
    three characters on every row (and at every place, where it keeps places), as an index of
    its own options built afresh from the rows holds them."""
    if engine.dialect.name != "sqlite":
        return
    detail = ", detail=none" if _detail(engine) == "none" else ""
    with engine.begin() as c:
        c.execute(text(_CHECK))
        c.execute(text(f"CREATE VIRTUAL TABLE temp.fresh USING fts5(body, tokenize='trigram'{detail})"))
        c.execute(text("INSERT INTO temp.fresh(rowid, body) SELECT id, body FROM main.search_part"))
        for name, db, table in (("kept", "main", "session_search_parts"), ("made", "temp", "fresh")):
            c.execute(text(f"CREATE VIRTUAL TABLE temp.{name} USING fts5vocab({db}, {table}, 'instance')"))
        got = {tuple(r) for r in c.execute(text("SELECT term, doc, offset FROM temp.kept"))}
        want = {tuple(r) for r in c.execute(text("SELECT term, doc, offset FROM temp.made"))}
        for name in ("kept", "made", "fresh"):
            c.execute(text(f"DROP TABLE temp.{name}"))
    if got != want:
        raise DatabaseError(_CHECK, None, Exception(f"{len(got ^ want)} entries differ"))


def _parts(engine: Engine) -> int:
    with session_scope(engine, write=False) as db:
        return int(db.exec(select(func.count()).select_from(SearchPart)).one())


def _found(engine: Engine, q: str) -> list[tuple[str, int, int]]:
    with session_scope(engine, write=False) as db:
        return [(h.session_id, h.turn, h.part) for h in search(db, SearchRequest(q=q, limit=200)).hits]


def _archive(fake: FakeOpenCode, settings: Settings, engine: Engine) -> ArchiveOutcome:
    async def go() -> ArchiveOutcome:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await archive_session_tree_async(
                "ses_root", settings=settings, engine=engine, server_url="http://oc.test", http=http
            )

    out = asyncio.run(go())
    assert out.ok, out.to_dict()
    return out


def _live(sid: str, mid: str, words: str) -> LiveMessage:
    info = {"id": mid, "sessionID": sid, "role": "assistant", "time": {"created": 1_000}}
    part = {"id": "prt_" + mid, "messageID": mid, "sessionID": sid, "type": "text", "text": words}
    return LiveMessage(sid, mid, 7, "assistant", False, {"info": info, "parts": [part]})


def test_every_writer_keeps_the_text_index_whole(engine: Engine, settings: Settings, tmp_path: Path) -> None:
    fake = tree([2, 1])
    fake.messages["ses_d1_0"].append(message("ses_d1_0", 2, text="first ECONNRESET seen"))
    _archive(fake, settings, engine)  # archive (the catch-up runs at once: the setting is 0)
    _intact(engine)
    assert _found(engine, "ECONNRESET") == [("ses_d1_0", 2, 0)]

    fake.messages["ses_d1_0"][-1] = message("ses_d1_0", 2, text="then EADDRINUSE instead")
    fake.messages["ses_root"].append(message("ses_root", 2, text="root says EADDRINUSE too"))
    _archive(fake, settings, engine)  # archived again: changed parts replaced, new ones added
    _intact(engine)
    assert _found(engine, "ECONNRESET") == []
    assert sorted(_found(engine, "EADDRINUSE")) == [("ses_d1_0", 2, 0), ("ses_root", 2, 0)]

    folder = tmp_path / "old"
    folder.mkdir()
    (folder / V1.name).write_text(V1.read_text())
    imported = str(json.loads(V1.read_text())["session_id"])
    red = Redactor(b"k" * 32, [])
    assert import_archives(engine, folder, settings, red).stats.new == 1  # import
    _intact(engine)
    assert {s for s, *_ in _found(engine, '"write NOTES.md"')} == {imported}

    child, _ = store_waiting_tree(engine)  # live messages: stored, changed, archived over, removed
    server = "http://oc:4096"
    with session_scope(engine) as db:
        store_live_messages(
            db, server, MessageBatch(upserts=[_live(child, "msg_x", "live ETIMEDOUT")]), redactor=red
        )
    _intact(engine)
    with session_scope(engine) as db:
        store_live_messages(
            db, server, MessageBatch(upserts=[_live(child, "msg_x", "now ENOTFOUND")]), redactor=red
        )
        put_parts(db, {child: ()})
    _intact(engine)
    assert [s for s, *_ in _found(engine, "ENOTFOUND")] == [child] and _found(engine, "ETIMEDOUT") == []
    with session_scope(engine) as db:
        store_live_messages(db, server, MessageBatch(deletes=[(child, "msg_x")]), redactor=red)
    _intact(engine)
    assert _found(engine, "ENOTFOUND") == []

    before = _found(engine, "EADDRINUSE")
    with session_scope(engine) as db:  # a store from before the content index
        db.exec(delete(SearchPart).where(SearchPart.live_message_id.is_(None)))  # type: ignore[call-overload, union-attr]
    _intact(engine)
    base = ["--data-dir", str(settings.data_dir), "--database-url", settings.db_url]
    r = CliRunner().invoke(app, [*base, "db", "reindex", "--json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["sessions"] == 5
    _intact(engine)
    assert sorted(_found(engine, "EADDRINUSE")) == sorted(before)

    prune(engine, archive_store(settings, engine), utcnow() + timedelta(days=1), keep_failures=False)
    _intact(engine)
    assert _found(engine, "EADDRINUSE") == [] and _found(engine, '"write NOTES.md"') == []


def test_a_row_written_behind_the_writers_back_fails_the_check(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        migrate.upgrade(engine)
        _intact(engine)
        with engine.begin() as c:
            c.execute(_ROW, {"s": "ses_x", "i": 0, "b": "never indexed"})
        with pytest.raises(DatabaseError):
            _intact(engine)
    finally:
        engine.dispose()


_WORDS = ("then git push --force", "push, then force", "git push --force-with-lease")


def _detail(engine: Engine) -> str:
    with engine.connect() as c:
        made = c.execute(
            text("SELECT sql FROM sqlite_master WHERE name = 'session_search_parts'")
        ).scalar_one()
    return "none" if "detail=none" in made else "full"


def test_0027_rebuilds_the_text_index_without_places_and_back(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        to_revision(engine, "0026")
        with session_scope(engine) as db:  # parts written as 0026 did, into a table with places
            put_parts(
                db, {f"ses_{i}": (ContentPart(0, 0, "text", None, None, w),) for i, w in enumerate(_WORDS)}
            )
        assert _detail(engine) == "full"
        to_revision(engine, "head")
        assert _detail(engine) == "none"
        _intact(engine)
        assert [s for s, *_ in _found(engine, '"push --force"')] == ["ses_2", "ses_0"]
        with session_scope(engine) as db:  # the one writer, on the rebuilt table
            put_parts(
                db, {"ses_0": (), "ses_3": (ContentPart(0, 0, "text", None, None, "git push --force"),)}
            )
        _intact(engine)
        assert [s for s, *_ in _found(engine, '"push --force"')] == ["ses_3", "ses_2"]
        to_revision(engine, "0026", down=True)
        assert _detail(engine) == "full"
        _intact(engine)
        assert [s for s, *_ in _found(engine, '"push --force"')] == ["ses_3", "ses_2"]
    finally:
        engine.dispose()


def test_0026_upgrades_a_store_with_parts_and_downgrades(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        to_revision(engine, "0025")
        with engine.begin() as c:  # parts written as 0025 did: its trigger indexed each row
            for i, words in enumerate(("alpha ECONNRESET", "beta EPIPE", "gamma ECONNRESET")):
                c.execute(_ROW, {"s": f"ses_{i}", "i": i, "b": words})
        to_revision(engine, "head")
        _intact(engine)
        assert [s for s, *_ in _found(engine, "ECONNRESET")] == ["ses_2", "ses_0"]
        with session_scope(engine) as db:  # the one writer, on the upgraded store
            put_parts(
                db, {"ses_0": (), "ses_3": (ContentPart(0, 0, "text", None, None, "delta ECONNRESET"),)}
            )
        _intact(engine)
        assert [s for s, *_ in _found(engine, "ECONNRESET")] == ["ses_3", "ses_2"]
        to_revision(engine, "0025", down=True)
        with engine.begin() as c:  # the trigger is back: a row written directly is indexed
            c.execute(_ROW, {"s": "ses_4", "i": 0, "b": "epsilon ECONNRESET"})
        _intact(engine)
        assert [s for s, *_ in _found(engine, "ECONNRESET")] == ["ses_4", "ses_3", "ses_2"]
    finally:
        engine.dispose()
