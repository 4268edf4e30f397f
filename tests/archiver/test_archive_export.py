"""`octel archives export DIR`, on SQLite and a real PostgreSQL: the database store's documents
come out as the folder store's files (names, bytes, gzip), `octel import archives` loads them
into another database store or a folder store and exporting that gives the same files back;
running it again changes nothing, a file that differs is kept unless --force, a document that
cannot be read is reported and skipped (exit 1), and no name leaves the folder."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import httpx
import orjson
import pgserver
import pytest
from archiver_fakes import FakeOpenCode, session, tree
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import select
from typer.testing import CliRunner

from archiver.files import read_plain
from cli import app
from telemetry.archiving import archive_session_tree_async, redactor_for
from telemetry.services.index.archive_export import export_archives
from telemetry.services.index.archive_import import import_archives
from telemetry.settings import Settings
from telemetry.store.archive_docs import ArchiveDocument, DatabaseStore
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex


def _settings(data: Path, url: str, kind: str) -> Settings:
    return Settings(data_dir=data, database_url=url, archive_store=kind, _env_file=None)  # type: ignore[call-arg]


def _archive(fake: FakeOpenCode, root: str, settings: Settings, engine: Engine, **kw: Any) -> None:
    async def go() -> bool:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            out = await archive_session_tree_async(
                root, settings=settings, engine=engine, server_url="http://oc.test", http=http, **kw
            )
            return out.ok

    assert asyncio.run(go())


def _octel(s: Settings, *args: str) -> Any:
    env = {
        "COLUMNS": "300",
        "NO_COLOR": "1",
        "OCTEL_REDACT_VALUES": "",
        "OCTEL_ARCHIVE_STORE": s.archive_store,
    }
    root = ["--data-dir", str(s.data_dir), "--database-url", s.db_url]
    return CliRunner(env=env).invoke(app, [*root, *args])


def _json(s: Settings, *args: str, code: int = 0) -> Any:
    res = _octel(s, *args, "--json")
    assert res.exit_code == code, res.output
    return orjson.loads(res.stdout)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _docs(engine: Engine) -> dict[str, bytes]:
    store = DatabaseStore(engine)
    return {n: store.read(n) for n in store.names()}


def _hashes(engine: Engine) -> dict[str, tuple[str, str]]:
    with session_scope(engine, write=False) as db:
        return {r.session_id: (r.archive_path, r.content_hash) for r in db.exec(select(SessionIndex))}


@pytest.fixture
def other_url(store_url: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A second, empty store on the same engine as ``store_url``."""
    if store_url.startswith("sqlite"):
        return f"sqlite:///{tmp_path / 'other.db'}"
    return pgserver.create_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def source(store_url: str, engine: Engine, tmp_path: Path) -> Settings:
    """A database store holding two trees: one of three sessions archived into it, and one
    archived with --gzip by a folder store and imported (its gzipped file is kept in
    ``tmp_path / "gz"``)."""
    s = _settings(tmp_path / "a", store_url, "database")
    _archive(tree([2]), "ses_root", s, engine, label="nightly")
    other = FakeOpenCode()
    other.add(session("ses_other", title="gzipped"), 3)
    files = _settings(tmp_path / "gz", f"sqlite:///{tmp_path / 'gz.db'}", "files")
    gz_engine = make_engine(files.db_url)
    upgrade(gz_engine)
    try:
        _archive(other, "ses_other", files, gz_engine, compress=True)
    finally:
        gz_engine.dispose()
    assert import_archives(engine, files.archives, s, redactor_for(s)).stats.new == 1
    return s


def test_database_to_files_to_another_store_and_back_gives_the_same_files(
    source: Settings, engine: Engine, other_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    docs = _docs(engine)
    assert len(docs) == 4 and sum(n.endswith(".json.gz") for n in docs) == 1
    report = _json(source, "archives", "export", str(out))
    assert (report["documents"], report["written"], report["failed"], report["differing"]) == (4, 4, [], [])
    files = _files(out)
    assert sorted(files) == sorted(docs)  # the names the store gave them
    assert {n: read_plain(out / n) for n in files} == docs  # the documents, byte for byte
    gz = next(n for n in files if n.endswith(".gz"))
    assert files[gz] == (tmp_path / "gz" / "archives" / gz).read_bytes()  # the gzipped file it was
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    assert all(stat.S_IMODE((out / n).stat().st_mode) == 0o600 for n in files)

    # files -> another database store: the same names, documents and index rows
    b = _settings(tmp_path / "b", other_url, "database")
    loaded = _json(b, "import", "archives", str(out))
    assert (loaded["new"], loaded["failed"]) == (4, [])
    b_engine = make_engine(other_url)
    try:
        assert _docs(b_engine) == docs and _hashes(b_engine) == _hashes(engine)
    finally:
        b_engine.dispose()
    again = tmp_path / "again"
    assert _json(b, "archives", "export", str(again))["written"] == 4
    assert _files(again) == files

    # files -> a folder store, and out of it again
    c = _settings(tmp_path / "c", f"sqlite:///{tmp_path / 'c.db'}", "files")
    assert _json(c, "import", "archives", str(out))["new"] == 4
    assert _files(c.archives) == files
    third = tmp_path / "third"
    assert _json(c, "archives", "export", str(third))["written"] == 4
    assert _files(third) == files


def test_export_again_changes_nothing_and_keeps_a_differing_file(source: Settings, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = _json(source, "archives", "export", str(out))
    before = {p.name: p.stat().st_ino for p in out.iterdir()}
    second = _json(source, "archives", "export", str(out))
    assert (second["written"], second["unchanged"], second["replaced"]) == (0, 4, 0)
    assert {p.name: p.stat().st_ino for p in out.iterdir()} == before  # not rewritten
    name = next(n for n in before if "ses_d1_0" in n)
    (out / name).write_bytes(b'{"edited": true}')
    kept = _json(source, "archives", "export", str(out), code=1)
    assert [(d["file"], d["session_id"]) for d in kept["differing"]] == [(name, "ses_d1_0")]
    assert (out / name).read_bytes() == b'{"edited": true}'
    table = _octel(source, "archives", "export", str(out))
    assert table.exit_code == 1 and "1 differing" in table.stdout and "--force" in table.stderr
    forced = _json(source, "archives", "export", str(out), "--force")
    assert (forced["replaced"], forced["unchanged"], forced["differing"]) == (1, 3, [])
    assert first["documents"] == 4 and b'"edited"' not in (out / name).read_bytes()


def test_an_unreadable_document_is_reported_and_the_rest_written(
    source: Settings, engine: Engine, tmp_path: Path
) -> None:
    with session_scope(engine) as db:
        bad = ArchiveDocument.session_id == "ses_d1_1"
        db.exec(update(ArchiveDocument).where(bad).values(data=b"not zstd at all"))  # type: ignore[call-overload]
    out = tmp_path / "out"
    report = _json(source, "archives", "export", str(out), code=1)
    assert report["written"] == 3 and [f["session_id"] for f in report["failed"]] == ["ses_d1_1"]
    assert "damaged" in report["failed"][0]["error"]
    assert not any("ses_d1_1" in n for n in _files(out))


def test_filters_and_bad_input(source: Settings, tmp_path: Path) -> None:
    tree_only = _json(source, "archives", "export", str(tmp_path / "t"), "ses_d1_1")  # a subagent: its tree
    assert tree_only["written"] == 3 and not any("ses_other" in n for n in _files(tmp_path / "t"))
    assert _json(source, "archives", "export", str(tmp_path / "s"), "--since", "1h")["written"] == 4
    late = _json(source, "archives", "export", str(tmp_path / "n"), "--since", "2999-01-01T00:00:00Z")
    assert late["documents"] == 0
    unknown = _octel(source, "archives", "export", str(tmp_path / "u"), "ses_nope")
    assert unknown.exit_code == 2 and "no archived session 'ses_nope'" in unknown.output
    (tmp_path / "file").write_text("x")
    notdir = _octel(source, "archives", "export", str(tmp_path / "file"))
    assert notdir.exit_code == 2 and "is not a folder" in notdir.output
    bad_since = _octel(source, "archives", "export", str(tmp_path / "b"), "--since", "yesterday-ish")
    assert bad_since.exit_code == 2 and "--since" in bad_since.output


def test_no_name_leaves_the_folder(tmp_path: Path) -> None:
    s = _settings(tmp_path / "data", f"sqlite:///{tmp_path / 'o.db'}", "database")
    engine = make_engine(s.db_url)
    upgrade(engine)
    try:
        _archive(tree([2]), "ses_root", s, engine)
        renamed = {"ses_d1_0": "../escaped.json", "ses_d1_1": "link/inside.json"}
        with session_scope(engine) as db:
            for sid, name in renamed.items():
                for table in (ArchiveDocument, SessionIndex):
                    column = "name" if table is ArchiveDocument else "archive_path"
                    row = table.session_id == sid  # type: ignore[attr-defined]
                    db.exec(update(table).where(row).values({column: name}))  # type: ignore[call-overload]
        (tmp_path / "out").mkdir()
        os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "link")
        report = export_archives(engine, DatabaseStore(engine), tmp_path / "out")
    finally:
        engine.dispose()
    assert sorted(f.session_id for f in report.failed) == ["ses_d1_0", "ses_d1_1"] and report.written == 1
    assert all("folder" in f.error for f in report.failed)
    assert not (tmp_path / "escaped.json").exists() and not (tmp_path / "elsewhere").exists()


def test_a_store_that_moved_to_the_database_exports_its_older_files_too(
    store_url: str, engine: Engine, tmp_path: Path
) -> None:
    """Rows indexed from files before the store switched to the database are read from the
    folder, and exported like the rest."""
    files = _settings(tmp_path / "a", store_url, "files")
    _archive(tree([1]), "ses_root", files, engine)
    originals = {p.name: p.read_bytes() for p in files.archives.iterdir()}
    moved = files.model_copy(update={"archive_store": "database"})
    report = _json(moved, "archives", "export", str(tmp_path / "out"))
    assert report["written"] == 2 and _files(tmp_path / "out") == originals
