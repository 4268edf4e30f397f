"""End to end through the command line: `octel archive` on a real server, then
`octel import archives` of what it wrote into another store, and into a database store whose
`octel archives export` gives back the same files."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from driver import run_prompt
from fakellm import FakeLLM
from opencode_harness import OpenCode
from typer.testing import CliRunner

from cli import app

pytestmark = pytest.mark.opencode


def test_octel_archive_then_import(opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path) -> None:
    fake_llm.load(
        {
            "title": "One step",
            "turns": [
                {"text": "Checking.", "tool_calls": [{"name": "bash", "arguments": {"command": "pwd"}}]},
                {"text": "Done here."},
            ],
        }
    )
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        root = run_prompt(http, "Where are we?")["root"]
        served = len(http.get(f"/session/{root}/message").json())
    runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"})
    res = runner.invoke(
        app,
        [
            "--data-dir",
            str(tmp_path / "a"),
            "archive",
            root,
            "--server",
            opencode.url,
            "--label",
            "cli",
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["ok"] and data["sessions"] == 1 and data["messages"] == served
    res = runner.invoke(
        app,
        ["--data-dir", str(tmp_path / "b"), "import", "archives", str(tmp_path / "a" / "archives"), "--json"],
    )
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["new"] == 1

    # into the database store and out again: the files `octel archive` wrote, byte for byte
    written = {p.name: p.read_bytes() for p in (tmp_path / "a" / "archives").iterdir()}
    db_runner = CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1", "OCTEL_ARCHIVE_STORE": "database"})
    c = ["--data-dir", str(tmp_path / "c")]
    res = db_runner.invoke(app, [*c, "import", "archives", str(tmp_path / "a" / "archives"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["new"] == 1, res.output
    assert not (tmp_path / "c" / "archives").exists()  # the documents went into the database
    res = db_runner.invoke(app, [*c, "archives", "export", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["written"] == 1, res.output
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == written
