"""The catch-up indexer on SQLite and on a real PostgreSQL: an import only queues its sessions,
a search says how many wait and since when, and a catch-up makes them searchable with the same
hits on both engines; a file imported where it lies is redacted before its text is indexed,
even when a writer queues it again meanwhile as written redacted; a session archived again
while it is read stays queued (its newer document is read next), one pruned meanwhile gets no
parts, pruning empties the queue, and the thread of `octel serve` / `octel watch` catches up
on its own."""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.record import record_from_doc
from telemetry.archive_store import archive_store
from telemetry.archiving import redactor_for
from telemetry.queries.content_search import SearchRequest, search
from telemetry.services.index import search_catchup
from telemetry.services.index.archive_import import import_archives
from telemetry.services.index.content_index import enqueue
from telemetry.services.index.indexing import index_records
from telemetry.services.index.prune import prune
from telemetry.services.index.search_catchup import CatchupThread, catch_up, pending_count
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.store.search_models import SearchPart, SearchPending
from telemetry.timeutil import utcnow

V1 = Path(__file__).parent.parent / "archiver" / "fixtures" / "v1_session.json"


@pytest.fixture
def later(settings: Settings) -> Settings:
    """The settings of a store whose index is caught up later (the default), not by each writer."""
    return settings.model_copy(update={"search_catchup_seconds": 5.0})


def _import(engine: Engine, settings: Settings, tmp_path: Path) -> str:
    folder = tmp_path / "old"
    folder.mkdir(exist_ok=True)
    doc = json.loads(V1.read_text())
    doc["messages"][0]["parts"][0]["text"] += " ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234"
    (folder / V1.name).write_text(json.dumps(doc))
    report = import_archives(engine, folder, settings, redactor_for(settings))
    assert report.skipped == [] and report.stats.new == 1
    return str(doc["session_id"])


SECRET = "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234"


def _in_place(engine: Engine, settings: Settings) -> str:
    """Import an unredacted archive already inside the archive folder: indexed where it lies,
    its bytes never rewritten."""
    folder = settings.archives
    folder.mkdir(parents=True, exist_ok=True)
    doc = json.loads(V1.read_text())
    doc["messages"][0]["parts"][0]["text"] += f" {SECRET}"
    (folder / V1.name).write_text(json.dumps(doc))
    report = import_archives(engine, folder, settings, redactor_for(settings))
    assert report.skipped == [] and report.copied == 0 and report.stats.new == 1
    assert SECRET in (folder / V1.name).read_text()  # still unredacted on disk
    return str(doc["session_id"])


def _queued_redacted(engine: Engine) -> dict[str, bool]:
    with session_scope(engine, write=False) as db:
        return {s: bool(r) for s, r in db.exec(select(SearchPending.session_id, SearchPending.redacted))}


def _hits(engine: Engine, q: str) -> list[tuple[str, int, int, str, str | None]]:
    with session_scope(engine, write=False) as db:
        page = search(db, SearchRequest(q=q, limit=200))
    return [(h.session_id, h.turn, h.part, h.kind, h.tool) for h in page.hits]


def _parts(engine: Engine) -> int:
    with session_scope(engine, write=False) as db:
        return int(db.exec(select(func.count()).select_from(SearchPart)).one())


def _catch_up(engine: Engine, settings: Settings) -> search_catchup.CatchupReport:
    return catch_up(engine, archive_store(settings, engine), redactor_for(settings))


def test_an_import_is_queued_said_and_then_searchable(
    engine: Engine, later: Settings, tmp_path: Path
) -> None:
    sid = _import(engine, later, tmp_path)
    with session_scope(engine, write=False) as db:
        page = search(db, SearchRequest(q="README"))
    assert page.hits == [] and page.pending_sessions == 1
    assert page.pending_since is not None and page.pending_since <= utcnow() + timedelta(seconds=1)
    report = _catch_up(engine, later)
    assert (report.sessions, report.errors) == (1, []) and report.parts == _parts(engine) > 0
    # the same hits on both engines: (session, turn, part, kind, tool)
    assert _hits(engine, "tool:bash ls") == [(sid, 1, 2, "tool", "bash")]
    assert [h[1:4] for h in _hits(engine, '"write NOTES.md"')] == [(0, 0, "text")]
    assert _hits(engine, "ghp_FAKEfake") == []  # the catch-up indexes redacted text only
    with session_scope(engine, write=False) as db:
        page = search(db, SearchRequest(q="README"))
    assert page.hits and (page.pending_sessions, page.pending_since) == (0, None)
    assert _catch_up(engine, later).sessions == 0  # nothing left: nothing read


def test_a_session_queued_again_while_read_waits_for_its_newer_document(
    engine: Engine, later: Settings, tmp_path: Path
) -> None:
    sid = _import(engine, later, tmp_path)
    real = search_catchup.open_archive

    def archived_again(store: Any, path: str) -> Any:
        with session_scope(engine) as db:
            enqueue(db, [sid])
        return real(store, path)

    with mock.patch.object(search_catchup, "open_archive", archived_again):
        assert _catch_up(engine, later).sessions == 0
    assert pending_count(engine) == 1 and _parts(engine) == 0
    assert _catch_up(engine, later).sessions == 1 and pending_count(engine) == 0 and _parts(engine) > 0


def test_pruning_empties_the_queue_even_while_a_catch_up_reads(
    engine: Engine, later: Settings, tmp_path: Path
) -> None:
    _import(engine, later, tmp_path)
    store = archive_store(later, engine)
    real = search_catchup.open_archive

    def pruned_meanwhile(st: Any, path: str) -> Any:
        doc = real(st, path)
        prune(engine, store, utcnow() + timedelta(days=1), keep_failures=False)
        return doc

    with mock.patch.object(search_catchup, "open_archive", pruned_meanwhile):
        assert _catch_up(engine, later).sessions == 0
    assert pending_count(engine) == 0 and _parts(engine) == 0


def test_the_thread_catches_up_on_its_own(engine: Engine, later: Settings, tmp_path: Path) -> None:
    _import(engine, later, tmp_path)
    done = threading.Event()
    real = search_catchup.catch_up

    def watched(*a: Any, **kw: Any) -> search_catchup.CatchupReport:
        report = real(*a, **kw)
        if report.sessions:
            done.set()
        return report

    thread = CatchupThread(engine, archive_store(later, engine), redactor_for(later), 0.05)
    with mock.patch.object(search_catchup, "catch_up", watched):
        thread.start()
        try:
            assert done.wait(60)
        finally:
            thread.close()
    assert pending_count(engine) == 0 and _hits(engine, "tool:bash ls")


def test_each_write_is_searchable_at_once_with_the_setting_at_0(
    engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    assert settings.search_catchup_seconds == 0
    sid = _import(engine, settings, tmp_path)
    assert pending_count(engine) == 0 and _hits(engine, "tool:bash ls") == [(sid, 1, 2, "tool", "bash")]


def test_octel_serve_catches_up_in_the_background(engine: Engine, later: Settings, tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from web.app import create_app

    sid = _import(engine, later, tmp_path)
    auth = {"Authorization": "Bearer test-token-0123456789"}
    serving = later.model_copy(update={"search_catchup_seconds": 0.05})
    with TestClient(create_app(serving)) as client:
        page: dict[str, Any] = {"pending_sessions": 1}
        for _ in range(600):  # until the server's catch-up has run (no time is asserted)
            page = client.get("/api/search", params={"q": "tool:bash ls"}, headers=auth).json()
            if page["pending_sessions"] == 0:
                break
            threading.Event().wait(0.1)
    assert page["pending_sessions"] == 0 and page["pending_since"] is None
    assert [(h["session_id"], h["tool"]) for h in page["hits"]] == [(sid, "bash")]


def test_a_file_imported_where_it_lies_is_redacted_before_it_is_indexed(
    engine: Engine, later: Settings
) -> None:
    sid = _in_place(engine, later)
    assert _queued_redacted(engine) == {sid: False}
    assert _catch_up(engine, later).sessions == 1
    assert _hits(engine, "ghp_FAKEfake") == [] and _hits(engine, "tool:bash ls")


def test_a_document_written_redacted_is_read_as_it_is_and_no_other(engine: Engine, later: Settings) -> None:
    sid = _in_place(engine, later)
    with session_scope(engine, write=False) as db:
        path = db.exec(select(SessionIndex.archive_path).where(SessionIndex.session_id == sid)).one()
    # a writer naming a document it did not write (a kept older archive) does not vouch for it
    doc = json.loads((later.archives / path).read_text())
    record = record_from_doc(doc, path, "h")
    with session_scope(engine) as db:
        index_records(db, [record], redactor=redactor_for(later), written=["ses_other.json"])
    assert _queued_redacted(engine) == {sid: False}
    # one that says it wrote it redacted: the flag only falls while queued, so the file
    # imported where it lay is still redacted before it is indexed
    with session_scope(engine) as db:
        index_records(db, [record], redactor=redactor_for(later), written=[path])
    assert _queued_redacted(engine) == {sid: False}
    assert _catch_up(engine, later).sessions == 1 and _hits(engine, "ghp_FAKEfake") == []
    # rewritten redacted (as octel writes it) and queued afresh as such: read as it is
    doc["messages"][0]["parts"][0]["text"] = doc["messages"][0]["parts"][0]["text"].replace(SECRET, "")
    (later.archives / path).write_text(json.dumps(doc))
    with session_scope(engine) as db:
        index_records(db, [record], redactor=redactor_for(later), written=[path])
    assert _queued_redacted(engine) == {sid: True}
    with mock.patch("archiver.redact.Redactor.redact_obj", side_effect=AssertionError("redacted again")):
        assert _catch_up(engine, later).sessions == 1
    assert _hits(engine, "tool:bash ls")
