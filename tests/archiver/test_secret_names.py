"""A session id is whatever a source or an imported file says it is: one shaped like a secret
must reach no file name, index row or document table, whichever way it came in (an archive
file imported, a Claude Code transcript named by it), in either archive store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from archiver_fakes import LoopbackServer, tree
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from typer.testing import CliRunner

from archiver.files import document_name
from archiver.redact import Redactor
from cli import app
from telemetry.store.db import make_engine

SECRETS = [
    "ghp_" + "FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "sk-ant-api03-FAKEfakeFAKEfakeFAKEfake-00",
    "AKIAFAKEFAKEFAKEFAKE",
]
_secret = st.sampled_from(SECRETS)
_around = st.text(st.characters(codec="ascii", categories=["L", "N"]), max_size=6)


@given(_secret, _around, _around, st.sampled_from(["session_id", "label", "agent"]))
def test_a_document_name_never_holds_a_secret_of_its_parts(secret: str, a: str, b: str, key: str) -> None:
    doc: dict[str, Any] = {"archived_at": "2026-11-30T10:00:00Z", "depth": 0, "session_id": "ses_1"}
    doc[key] = f"{a} {secret} {b}"
    name, sid = document_name(doc, Redactor(b"k" * 32))
    assert secret not in name and secret not in sid
    assert (sid == "ses_1") == (key != "session_id")


def _octel(data: Path, store: str, *args: str) -> Any:
    runner = CliRunner(env={"OCTEL_REDACT_VALUES": "", "OCTEL_ARCHIVE_STORE": store})
    return runner.invoke(app, ["--data-dir", str(data), *args])


def _everything(data: Path) -> bytes:
    """Every byte octel keeps: file names and contents (the Claude import's state included),
    and the whole database."""
    files = [p for p in data.rglob("*") if p.is_file()]
    out = b"".join(str(p).encode() + p.read_bytes() for p in files)
    eng = make_engine(f"sqlite:///{data / 'octel.db'}")
    try:
        with eng.connect() as conn:
            dump = conn.connection.driver_connection.iterdump()  # type: ignore[union-attr]
            out += "\n".join(dump).encode()
            names = conn.execute(text("select archive_path from session_index")).scalars().all()
    finally:
        eng.dispose()
    assert names  # something was stored
    return out


@pytest.mark.parametrize("store", ["files", "database"])
def test_an_imported_archive_with_a_secret_session_id_is_stored_redacted(tmp_path: Path, store: str) -> None:
    src = tmp_path / "src"
    with LoopbackServer(tree([])) as srv:
        assert _octel(src, "files", "archive", "ses_root", "--server", srv.url).exit_code == 0
    (path,) = (src / "archives").iterdir()
    doc = orjson.loads(path.read_bytes())
    old = tmp_path / "old"
    old.mkdir()
    for i, secret in enumerate(SECRETS):
        (old / f"{i}.json").write_text(json.dumps({**doc, "session_id": secret, "root_session_id": secret}))
    data = tmp_path / "data"
    r = _octel(data, store, "import", "archives", str(old), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["new"] == len(SECRETS)
    kept = _everything(data)
    assert not [s for s in SECRETS if s.encode() in kept]


@pytest.mark.parametrize("store", ["files", "database"])
def test_a_claude_transcript_named_by_a_secret_is_stored_redacted(tmp_path: Path, store: str) -> None:
    project = tmp_path / "claude" / "projects" / "-work"
    project.mkdir(parents=True)
    line = {
        "type": "user",
        "uuid": "u1",
        "timestamp": "2026-11-30T10:00:00Z",
        "message": {"role": "user", "content": "hi"},
    }
    (project / f"{SECRETS[0]}.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    data = tmp_path / "data"
    r = _octel(data, store, "import", "claude", str(tmp_path / "claude"), "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["archived"] == 1
    assert SECRETS[0].encode() not in _everything(data)
