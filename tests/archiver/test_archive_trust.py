"""What a user relies on when archives are bad, huge or hostile: a read-back before anything
is deleted, imports that skip a bad file and index the rest, one containment rule for every
reader, and size limits that hold for gzip bombs."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from archiver_fakes import FakeOpenCode, LoopbackServer, recording_deletes, tree
from fastapi.testclient import TestClient
from sqlmodel import select
from typer.testing import CliRunner

import archiver.archive
import archiver.store
from archiver.files import ArchiveTooLarge, contained, read_plain, write_atomic
from archiver.validate import ArchiveInvalid, check_archive
from cli import app
from telemetry.archiving import ArchiveOutcome, archive_session_tree_async
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex
from web.app import create_app

SECRET = "outside-the-archive-folder-secret"


def _octel(data: Path, *args: str) -> Any:
    runner = CliRunner(env={"COLUMNS": "300", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": ""})
    return runner.invoke(app, ["--data-dir", str(data), *args])


def _rows(data: Path) -> list[SessionIndex]:
    eng = make_engine(f"sqlite:///{data / 'octel.db'}")
    try:
        with session_scope(eng, write=False) as db:
            return list(db.exec(select(SessionIndex).order_by(SessionIndex.session_id)))
    finally:
        eng.dispose()


@pytest.fixture
def archived(tmp_path: Path) -> Path:
    """A data folder with one archived tree of two sessions (root and one child)."""
    data = tmp_path / "data"
    with LoopbackServer(tree([1])) as srv:
        assert _octel(data, "archive", "ses_root", "--server", srv.url).exit_code == 0
    return data


def _doc(data: Path, sid: str = "ses_root") -> dict[str, Any]:
    (path,) = [p for p in (data / "archives").iterdir() if p.name.endswith(f"__{sid}.json")]
    out: dict[str, Any] = orjson.loads(path.read_bytes())
    return out


# --- read back before it counts --------------------------------------------------------------


def _run(fake: FakeOpenCode, settings: Settings, **kw: Any) -> ArchiveOutcome:
    async def go() -> ArchiveOutcome:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await archive_session_tree_async(
                "ses_root", settings=settings, server_url="http://oc.test", http=http, **kw
            )

    return asyncio.run(go())


def test_delete_after_waits_for_a_valid_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]
    fake = tree([1])
    deleted = recording_deletes(fake)

    def bad(doc: Any) -> None:
        raise ArchiveInvalid("messages.0: 'parts' is a required property")

    monkeypatch.setattr(archiver.store, "check_archive", bad)
    out = _run(fake, settings, delete_after=True)
    assert not out.ok and deleted == [] and out.result is not None
    assert "failed its read-back" in out.result.write_errors[0] and "parts" in out.result.write_errors[0]
    assert out.result.delete_error is not None
    monkeypatch.undo()
    out = _run(fake, settings, delete_after=True)
    assert out.ok and deleted == ["/session/ses_root"]


def test_a_torn_file_fails_its_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings(data_dir=tmp_path / "data", _env_file=None)  # type: ignore[call-arg]
    real = archiver.store.write_atomic

    def torn(path: Path, data: bytes, **kw: Any) -> None:
        real(path, data[: len(data) // 2], **kw)

    monkeypatch.setattr(archiver.store, "write_atomic", torn)
    out = _run(tree([]), settings, delete_after=True)
    assert not out.ok and out.result is not None and not out.result.deleted
    assert "differs from what was written" in out.result.write_errors[0]


def test_archives_written_validate_against_their_schema(archived: Path) -> None:
    for p in (archived / "archives").iterdir():
        check_archive(orjson.loads(p.read_bytes()))


# --- import: file by file -------------------------------------------------------------------

BAD = {
    "messages_info": (lambda d: d.update(messages=[{"info": "x"}]), "messages.0"),
    "label_dict": (lambda d: d.update(label={"a": 1}), "label"),
    "title_int": (lambda d: d.update(title=5), "title"),
    "tokens_1e30": (lambda d: d["totals"]["tokens"].update(input=10**30), "totals.tokens.input"),
    "cost_nan": (lambda d: d["totals"].update(cost="NaN"), "totals.cost"),
    "time_1e300": (lambda d: d["session"].update(time={"created": 1e300}), "session.time.created"),
    # the index's id columns: SQLite would keep them, PostgreSQL refuses them
    "id_nul": (lambda d: d.update(session_id="ses_a\x00b"), "session_id"),
    "id_long": (lambda d: d.update(root_session_id="ses_" + "x" * 300), "root_session_id"),
}


def test_import_skips_each_bad_file_with_its_reason_and_indexes_the_rest(
    archived: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    good = _doc(archived)
    for name, (spoil, _field) in BAD.items():
        doc = orjson.loads(orjson.dumps(good))
        doc["session_id"] = f"ses_{name.replace('_', '')}"
        spoil(doc)
        (folder / f"{name}.json").write_text(json.dumps(doc))
    (folder / "claude-result.json").write_text(
        json.dumps({"type": "result", "subtype": "success", "session_id": "abc-123", "num_turns": 3})
    )
    (folder / "list.json").write_text("[1, 2, 3]")
    for i in range(3):
        (folder / f"good{i}.json").write_bytes(orjson.dumps({**good, "session_id": f"ses_good{i}"}))
    data = tmp_path / "fresh"
    res = _octel(data, "import", "archives", str(folder), "--json")
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and report["new"] == 3 and report["copied"] == 3
    why = {Path(f["file"]).stem: f["error"] for f in report["failed"]}
    assert set(why) == {*BAD, "claude-result", "list"}
    for name, (_spoil, field) in BAD.items():
        assert field in why[name], (name, why[name])
    assert "not an archive" in why["claude-result"] and "not an archive" in why["list"]
    assert [r.session_id for r in _rows(data)] == ["ses_good0", "ses_good1", "ses_good2"]


def test_a_session_without_turns_is_never_healthy(archived: Path, tmp_path: Path) -> None:
    doc = _doc(archived)
    doc.update(session_id="ses_empty", messages=[], per_turn=[], findings=[], verdict="healthy")
    doc["totals"].update(turns=0, messages=0)
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "empty.json").write_bytes(orjson.dumps(doc))
    assert _octel(archived, "import", "archives", str(folder)).exit_code == 0
    (row,) = [r for r in _rows(archived) if r.session_id == "ses_empty"]
    assert row.verdict == "empty"


def test_import_never_indexes_a_symlink_to_a_file_outside_the_folder(archived: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps({**_doc(archived), "session_id": "ses_outside", "title": SECRET}))
    archives = archived / "archives"
    os.symlink(outside, archives / "20260101T000000Z__sub0__x__y__ses_outside.json")
    res = _octel(archived, "import", "archives", str(archives), "--json")
    report = json.loads(res.stdout)
    assert res.exit_code == 1 and report["updated"] == 2 and report["new"] == 0
    assert "outside" in report["failed"][0]["error"]
    assert "ses_outside" not in {r.session_id for r in _rows(archived)}


def test_no_read_route_serves_a_file_outside_the_archive_folder(archived: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_bytes(orjson.dumps({**_doc(archived), "title": SECRET, "per_turn": []}))
    archives = archived / "archives"
    (path,) = [p for p in archives.iterdir() if p.name.endswith("__ses_root.json")]
    path.unlink()
    os.symlink(outside, path)  # swapped after it was indexed
    settings = Settings(data_dir=archived, _env_file=None)  # type: ignore[call-arg]
    assert contained(archives, path.name) is None
    with TestClient(create_app(settings)) as client:
        one = client.get("/api/sessions/ses_root")
        assert one.status_code == 200 and SECRET not in one.text
        assert one.json()["archive"]["available"] is False
        msgs = client.get("/api/sessions/ses_root/messages")
        assert msgs.status_code == 404 and SECRET not in msgs.text
    shown = _octel(archived, "sessions", "show", "ses_root", "--json")
    assert SECRET not in shown.stdout


# --- size limits ----------------------------------------------------------------------------


def test_a_gzip_bomb_stops_at_the_limit_with_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        for _ in range(64):
            f.write(b" " * (1 << 20))  # 64 MiB of spaces
    limit = 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(ArchiveTooLarge, match="expands to more than the limit"):
            read_plain(bomb, limit)
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert bomb.stat().st_size < limit and peak < 4 * limit


def test_files_over_the_limit_are_refused_on_read_and_write(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b'{"x": "' + b"a" * 5000 + b'"}')
    with pytest.raises(ArchiveTooLarge, match="more than the limit of 4096"):
        read_plain(big, 4096)
    assert read_plain(big, 8192).startswith(b'{"x"')
    with pytest.raises(Exception, match="more than the limit"):
        write_atomic(tmp_path / "new.json", b"x" * 5000, max_bytes=4096)
    assert not (tmp_path / "new.json").exists()


def test_reading_a_small_archive_holds_its_size_not_the_limit(tmp_path: Path) -> None:
    small = tmp_path / "small.json"
    small.write_bytes(orjson.dumps({"x": "a" * 20_000}))
    tracemalloc.start()
    try:
        assert read_plain(small, 64 << 20) == small.read_bytes()
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 200_000, "a 20 kB file read under a 64 MiB limit holds about 20 kB"


@pytest.mark.parametrize(("grown_to", "limit"), [(5000, 8192), (9000, 8192)])
def test_a_file_that_grew_after_its_size_was_taken_is_read_whole_within_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grown_to: int, limit: int
) -> None:
    grown = tmp_path / "grown.json"
    grown.write_bytes(b'{"x": "' + b"a" * (grown_to - 10) + b'"}')
    real_fstat = os.fstat

    def stale(fd: int) -> Any:  # the size as it was before the last write
        st = real_fstat(fd)
        return os.stat_result((*st[:6], 100, *st[7:]))

    monkeypatch.setattr(os, "fstat", stale)
    if grown_to > limit:
        with pytest.raises(ArchiveTooLarge, match="more than the limit of 8192"):
            read_plain(grown, limit)
    else:
        assert read_plain(grown, limit) == grown.read_bytes()


def test_import_skips_a_file_over_the_limit(archived: Path, tmp_path: Path) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    with gzip.open(folder / "bomb.json.gz", "wb") as f:
        f.write(b" " * (3 << 20))
    (folder / "good.json").write_bytes(orjson.dumps({**_doc(archived), "session_id": "ses_fine"}))
    runner = CliRunner(env={"COLUMNS": "300", "OCTEL_ARCHIVE_MAX_BYTES": str(2 << 20)})
    res = runner.invoke(app, ["--data-dir", str(archived), "import", "archives", str(folder), "--json"])
    report = json.loads(res.stdout)
    assert report["new"] == 1 and "expands to more than the limit" in report["failed"][0]["error"]
