"""The database archive store (`OCTEL_ARCHIVE_STORE=database`), on SQLite and a real PostgreSQL:
documents written in the index's transaction, read back before a tree is deleted, bounded and
validated like files, and read by the console, the CLI, `detect`, `why`, pruning, repair and
the trace export exactly as files are."""

from __future__ import annotations

import asyncio
import gzip
import threading
import tracemalloc
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import zstandard
from archiver_fakes import FakeOpenCode, LoopbackServer, recording_deletes, tree
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

import telemetry.store.archive_docs as archive_docs
from archiver.files import ArchiveTooLarge
from archiver.store import ArchiveMissing, FolderStore
from archiver.validate import ArchiveInvalid
from cli import app
from telemetry.archive_store import archive_store
from telemetry.archiving import ArchiveOutcome, archive_session_tree_async, redactor_for
from telemetry.otel_export.sources import load_tree
from telemetry.queries.session_detail import session_detail
from telemetry.queries.why import why
from telemetry.services.index.archive_import import import_archives
from telemetry.services.index.archive_repair import check_index, repair_index
from telemetry.services.index.prune import prune
from telemetry.settings import Settings
from telemetry.store.archive_docs import ArchiveDocument, DatabaseStore, decode, encode
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex
from telemetry.timeutil import utcnow
from web.app import create_app


@pytest.fixture
def db_settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"archive_store": "database"})


def _run(fake: FakeOpenCode, settings: Settings, engine: Engine | None = None, **kw: Any) -> ArchiveOutcome:
    async def go() -> ArchiveOutcome:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await archive_session_tree_async(
                "ses_root", settings=settings, engine=engine, server_url="http://oc.test", http=http, **kw
            )

    return asyncio.run(go())


def _docs(engine: Engine) -> list[ArchiveDocument]:
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(ArchiveDocument).order_by(ArchiveDocument.session_id)))


def _octel(settings: Settings, *args: str) -> Any:
    env = {"COLUMNS": "300", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": "", "OCTEL_ARCHIVE_STORE": "database"}
    runner = CliRunner(env=env)
    root = ["--data-dir", str(settings.data_dir), "--database-url", settings.db_url]
    return runner.invoke(app, [*root, *args])


def test_the_default_follows_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OCTEL_ARCHIVE_STORE", raising=False)
    s = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    assert s.archive_store_kind == "files"
    pg = s.model_copy(update={"database_url": "postgresql+psycopg://u@h/db"})
    assert pg.archive_store_kind == "database"
    assert pg.model_copy(update={"archive_store": "files"}).archive_store_kind == "files"
    assert s.model_copy(update={"archive_store": "database"}).archive_store_kind == "database"


def test_archive_writes_rows_not_files_and_every_reader_finds_them(
    db_settings: Settings, engine: Engine
) -> None:
    fake = tree([2])
    deleted = recording_deletes(fake)
    out = _run(fake, db_settings, engine, delete_after=True, label="nightly")
    assert out.ok and out.result is not None and out.result.deleted, out.to_dict()
    assert deleted == ["/session/ses_root"]
    assert not db_settings.archives.exists() or not any(db_settings.archives.iterdir())
    docs = _docs(engine)
    assert [d.session_id for d in docs] == ["ses_d1_0", "ses_d1_1", "ses_root"]
    assert all(d.codec == "zstd" and d.stored_size < d.size for d in docs)
    with session_scope(engine, write=False) as db:
        rows = {r.session_id: r for r in db.exec(select(SessionIndex))}
        assert {d.session_id: d.name for d in docs} == {s: r.archive_path for s, r in rows.items()}
        assert all(rows[d.session_id].content_hash == d.content_hash for d in docs)
        store = archive_store(db_settings, engine)
        detail = session_detail(db, "ses_root", store)
        assert detail is not None and detail.archive.available and detail.per_turn
        answer = why(db, "ses_root", store)
        assert answer is not None and "per-turn evidence is missing" not in answer.model_dump_json()
        loaded = load_tree(db, store, "ses_root")
        assert len(loaded.docs) == 3 and not loaded.problems
    # the CLI, with only the database to read from
    shown = _octel(db_settings, "sessions", "show", "ses_root", "--json")
    assert shown.exit_code == 0, shown.output
    assert orjson.loads(shown.output)["archive"]["available"] is True
    detected = _octel(db_settings, "detect", "ses_root", "--json")
    assert detected.exit_code == 0, detected.output
    assert orjson.loads(detected.output)["source"] == "ses_root"
    whyd = _octel(db_settings, "why", "ses_root", "--json")
    assert whyd.exit_code == 0 and "per-turn evidence is missing" not in whyd.output
    # the console and its JSON twin
    with TestClient(create_app(db_settings)) as client:
        page = client.get("/api/sessions/ses_root").json()
        assert page["archive"]["available"] is True and page["per_turn"]
        msgs = client.get("/api/sessions/ses_root/messages").json()
        assert msgs["total"] == 2 and msgs["items"]
        name = docs[-1].name
        assert (
            client.get("/api/sessions/archived/detail", params={"file": name}).json()["session_id"]
            == "ses_root"
        )
        assert client.get("/api/sessions/archived/detail", params={"file": "nope.json"}).status_code == 404


def test_rearchive_keeps_one_document_per_session(db_settings: Settings, engine: Engine) -> None:
    fake = tree([1])
    first = _run(fake, db_settings, engine)
    second = _run(fake, db_settings, engine)
    assert first.ok and second.ok
    docs = _docs(engine)
    assert len(docs) == 2
    assert {d.name for d in docs} == set(second.result.written if second.result else [])


def test_delete_waits_for_a_valid_document(
    db_settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tree([])
    deleted = recording_deletes(fake)

    def bad(doc: Any) -> None:
        raise ArchiveInvalid("messages.0: 'parts' is a required property")

    monkeypatch.setattr(archive_docs, "check_archive", bad)
    out = _run(fake, db_settings, engine, delete_after=True)
    assert not out.ok and deleted == [] and out.result is not None and out.result.delete_error
    assert "parts" in out.result.write_errors[0] and _docs(engine) == []
    monkeypatch.undo()

    def torn(plain: bytes) -> tuple[str, bytes]:
        codec, blob = encode(plain)
        return codec, blob[: len(blob) // 2]

    monkeypatch.setattr(archive_docs, "encode", torn)
    out = _run(fake, db_settings, engine, delete_after=True)
    assert not out.ok and deleted == [] and out.result is not None
    assert any("failed its read-back" in e for e in out.result.write_errors), out.result.write_errors
    monkeypatch.undo()
    out = _run(fake, db_settings, engine, delete_after=True)
    assert out.ok and deleted == ["/session/ses_root"]


def test_size_limit_holds_both_ways(db_settings: Settings, engine: Engine) -> None:
    small = db_settings.model_copy(update={"archive_max_bytes": 1024})
    out = _run(tree([]), small, engine)
    assert not out.ok and out.result is not None and "more than the limit" in out.result.write_errors[0]
    assert _docs(engine) == []
    assert _run(tree([]), db_settings, engine).ok
    (doc,) = _docs(engine)
    with pytest.raises(ArchiveTooLarge):
        DatabaseStore(engine, max_bytes=1024).read(doc.name)
    # a row that lies about its size still stops at the limit: a zstd bomb
    bomb = zstandard.ZstdCompressor().compress(b" " * 50_000_000)
    with pytest.raises(ArchiveTooLarge):
        decode("zstd", bomb, "bomb", 1_000_000)
    with pytest.raises(ValueError, match="damaged"):
        decode("zstd", bomb[:20], "torn", 1_000_000, expected=50)
    with pytest.raises(ArchiveMissing):
        DatabaseStore(engine).read("gone.json")


def test_reading_a_small_document_holds_its_size_not_a_chunk() -> None:
    plain = orjson.dumps({"x": "a" * 20_000})
    for codec, blob in (encode(plain), ("gzip", gzip.compress(plain))):
        tracemalloc.start()
        try:
            assert decode(codec, blob, "doc", 64 << 20, expected=len(plain)) == plain
            _now, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 200_000, f"{codec}: a 20 kB document is read into about 20 kB, not 1 MiB"


@hsettings(max_examples=50, deadline=None)
@given(st.binary(max_size=5000))
def test_codec_round_trip(plain: bytes) -> None:
    codec, blob = encode(plain)
    assert decode(codec, blob, "x", 5000) == plain
    if plain:
        with pytest.raises(ArchiveTooLarge):
            decode(codec, blob, "x", len(plain) - 1)


def test_prune_repair_and_import_through_the_database(
    db_settings: Settings, engine: Engine, tmp_path: Path
) -> None:
    # files written by the folder store come in byte for byte
    folder = tmp_path / "old-archives"
    files_settings = db_settings.model_copy(update={"archive_store": "files", "archive_dir": folder})
    other = make_engine(f"sqlite:///{tmp_path / 'files.db'}")
    upgrade(other)
    try:
        assert _run(tree([1]), files_settings, other).ok
    finally:
        other.dispose()
    originals = {p.name: p.read_bytes() for p in folder.iterdir()}
    (folder / "broken.json").write_bytes(b"{not json")
    report = import_archives(engine, folder, db_settings, redactor_for(db_settings))
    assert report.stats.new == 2 and [f["file"] for f in report.skipped] == [str(folder / "broken.json")]
    store = DatabaseStore(engine)
    assert {n: store.read(n) for n in store.names()} == originals
    again = import_archives(engine, folder, db_settings, redactor_for(db_settings))
    assert again.stats.new == 0 and len(_docs(engine)) == 2  # idempotent
    # a document gone is found and its row repaired
    name = store.names("ses_d1_0")[0]
    store.remove([name])
    health = check_index(engine, db_settings)
    assert health.missing == [("ses_d1_0", name)]
    assert repair_index(engine, db_settings, redactor_for(db_settings))["removed"] == ["ses_d1_0"]
    assert check_index(engine, db_settings).missing == []
    # retention removes documents with their rows
    report2 = prune(engine, store, utcnow() + timedelta(days=1), keep_failures=False)
    assert report2["archive_files"] == 1 and report2["archive_bytes"] > 0 and not report2["errors"]
    assert _docs(engine) == []


def test_concurrent_archives_of_one_session_leave_one_document(db_settings: Settings) -> None:
    """Two writers (each with its own engine, as two instances have) archive the same tree at
    once; the store ends with one document and one index row per session, and they agree."""
    barrier = threading.Barrier(2)
    outs: list[ArchiveOutcome] = []

    def one() -> None:
        eng = make_engine(db_settings.db_url)
        try:
            barrier.wait()
            outs.append(_run(tree([2]), db_settings, eng))
        finally:
            eng.dispose()

    first = make_engine(db_settings.db_url)
    upgrade(first)  # the schema, before the race
    try:
        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(outs) == 2 and all(o.result is not None and o.result.written for o in outs)
        docs = _docs(first)
        assert sorted(d.session_id for d in docs) == ["ses_d1_0", "ses_d1_1", "ses_root"]
        with session_scope(first, write=False) as db:
            rows = {r.session_id: r.archive_path for r in db.exec(select(SessionIndex))}
        assert rows == {d.session_id: d.name for d in docs}
    finally:
        first.dispose()


def test_a_folder_store_and_the_cli_archive_command(tmp_path: Path, store_url: str) -> None:
    """`octel archive` with OCTEL_ARCHIVE_STORE=database writes no file."""
    s = Settings(data_dir=tmp_path / "data", database_url=store_url, _env_file=None)  # type: ignore[call-arg]
    with LoopbackServer(tree([1])) as srv:
        res = _octel(s, "archive", "ses_root", "--server", srv.url, "--json")
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    assert body["complete"] and all(f.startswith("database:") for f in body["files"])
    assert FolderStore(s.archives).names() == []


def test_a_store_that_kept_files_before_loses_nothing_when_it_moves_to_the_database(
    db_settings: Settings, engine: Engine
) -> None:
    files_settings = db_settings.model_copy(update={"archive_store": "files"})
    assert _run(tree([1]), files_settings, engine).ok  # archived as files, indexed in this store
    names = sorted(p.name for p in files_settings.archives.iterdir())
    # now the database store (the PostgreSQL default): the rows name files it does not hold
    health = check_index(engine, db_settings)
    assert health.missing == [] and health.in_folder == 2
    with session_scope(engine, write=False) as db:
        detail = session_detail(db, "ses_root", archive_store(db_settings, engine))
        assert detail is not None and detail.archive.available and detail.per_turn
    checks = {c["name"]: c for c in orjson.loads(_octel(db_settings, "doctor", "--json").output)["checks"]}
    assert (
        checks["archive index"]["status"] == "warn"
        and "octel import archives" in checks["archive index"]["fix"]
    )
    # repair removes nothing; the import moves the files into the database
    assert repair_index(engine, db_settings, redactor_for(db_settings))["removed"] == []
    import_archives(engine, files_settings.archives, db_settings, redactor_for(db_settings))
    assert sorted(DatabaseStore(engine).names()) == names
    assert check_index(engine, db_settings).in_folder == 0
