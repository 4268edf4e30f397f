"""`octel archive` and `octel import archives` through the real CLI entry point."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from archiver_fakes import LoopbackServer, tree
from sqlmodel import select
from typer.testing import CliRunner

from cli import app
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

V1 = Path(__file__).parent / "fixtures" / "v1_session.json"


def _octel(tmp_path: Path, *args: str) -> Any:
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": ""})
    return runner.invoke(app, ["--data-dir", str(tmp_path / "data"), *args])


def _rows(tmp_path: Path) -> list[SessionIndex]:
    eng = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    try:
        with session_scope(eng, write=False) as db:
            return list(db.exec(select(SessionIndex).order_by(SessionIndex.depth)))
    finally:
        eng.dispose()


def test_archive_command_json(tmp_path: Path) -> None:
    with LoopbackServer(tree([2])) as srv:
        res = _octel(tmp_path, "archive", "ses_root", "--server", srv.url, "--label", "c-1", "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["ok"] and data["sessions"] == 3 and data["indexed"]["new"] == 3
    assert next(r.session_id for r in _rows(tmp_path)) == "ses_root"
    assert all(r.label == "c-1" for r in _rows(tmp_path))


def test_archive_command_table_and_gzip(tmp_path: Path) -> None:
    with LoopbackServer(tree([1])) as srv:
        res = _octel(tmp_path, "archive", "ses_root", "--server", srv.url, "--gzip")
    assert res.exit_code == 0, res.output
    assert "complete" in res.stdout and "2 new" in res.stdout
    files = sorted((tmp_path / "data" / "archives").iterdir())
    assert len(files) == 2 and all(f.name.endswith(".json.gz") for f in files)
    assert json.loads(gzip.decompress(files[0].read_bytes()))["schema_version"] == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["archive", "not-an-id"], "is not an OpenCode session id"),
        (["archive", "ses_abcdef12", "--server", "ftp://x"], "--server must be an http(s) URL"),
        (["import", "archives", "/no/such/folder"], "is not a folder"),
    ],
)
def test_bad_input_is_one_sentence(tmp_path: Path, args: list[str], message: str) -> None:
    res = _octel(tmp_path, *args)
    assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with LoopbackServer(tree([])) as srv:
        url = srv.url
    res = _octel(tmp_path, "archive", "ses_abcdef12", "--server", url)
    assert res.exit_code == 1 and "nothing archived from" in res.output
    assert "Traceback" not in res.output


def test_import_v1_and_v2_archives_twice(tmp_path: Path) -> None:
    with LoopbackServer(tree([1])) as srv:
        assert _octel(tmp_path, "archive", "ses_root", "--server", srv.url).exit_code == 0
    folder = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "data" / "archives", folder)
    shutil.copy(V1, folder / "old-v1.json")
    (folder / "junk.json").write_text("{not json")
    shutil.rmtree(tmp_path / "data")
    res = _octel(tmp_path, "import", "archives", str(folder), "--json")
    data = json.loads(res.stdout)
    assert (
        res.exit_code == 1
        and data["new"] == 3
        and [Path(f["file"]).name for f in data["failed"]] == ["junk.json"]
    )
    (folder / "junk.json").unlink()
    res = _octel(tmp_path, "import", "archives", str(folder))
    assert res.exit_code == 0 and "0 new, 3 updated" in res.stdout
    rows = _rows(tmp_path)
    assert len(rows) == 3 and {r.schema_version for r in rows} == {2}
    # copied into the archive folder (the one place readers look), named as the archiver names
    archives = tmp_path / "data" / "archives"
    assert all(not Path(r.archive_path).is_absolute() and (archives / r.archive_path).is_file() for r in rows)


def test_import_goes_on_past_a_truncated_gzip(tmp_path: Path) -> None:
    with LoopbackServer(tree([])) as srv:
        assert _octel(tmp_path, "archive", "ses_root", "--server", srv.url).exit_code == 0
    folder = tmp_path / "elsewhere"
    shutil.copytree(tmp_path / "data" / "archives", folder)
    good = next(folder.iterdir()).read_bytes()
    (folder / "bad.json.gz").write_bytes(gzip.compress(good)[:40])
    shutil.rmtree(tmp_path / "data")
    res = _octel(tmp_path, "import", "archives", str(folder))
    assert res.exit_code == 1 and "Aborted" not in res.output and "Traceback" not in res.output
    assert "1 new" in res.stdout and "bad.json.gz" in res.output and "damaged gzip" in res.output
    assert [r.session_id for r in _rows(tmp_path)] == ["ses_root"]


def test_missing_redact_file_is_bad_input(tmp_path: Path) -> None:
    runner = CliRunner(env={"COLUMNS": "300", "OCTEL_REDACT_FILE": str(tmp_path / "nope.txt")})
    res = runner.invoke(app, ["--data-dir", str(tmp_path / "data"), "archive", "ses_abc"])
    assert res.exit_code == 2 and "is not a readable file" in res.output
