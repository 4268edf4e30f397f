"""`POST /api/v1/agent-runs` and `octel runs add` with stream-json a broken or hostile wrapper
sends: real runs' lines with any value anywhere replaced by anything. The run is stored or
refused with a 4xx naming the field, and its conversation is archived or its outcome says why:
never a 5xx, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_lines import FIXTURES, mutated_lines
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from typer.testing import CliRunner

import telemetry.services.claude.runs
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.stream import tree_from_stream
from archiver.redact import Redactor
from cli import app
from telemetry.settings import Settings
from web.app import create_app

AUTH = {"Authorization": "Bearer test-token-0123456789"}
STREAMS = [
    json.loads(x)
    for p in sorted(FIXTURES.glob("*/stream-json.stdout.jsonl"))
    for x in p.read_text().splitlines()
    if x.strip()
]


@pytest.fixture
def octel(tmp_path: Path) -> Iterator[TestClient]:
    s = Settings(data_dir=tmp_path / "data", ingest_token="test-token-0123456789", _env_file=None)  # type: ignore[arg-type,call-arg]
    with TestClient(create_app(s), raise_server_exceptions=False) as c:
        yield c


def _text(lines: list[Any]) -> str:
    return "".join(json.dumps(x) + "\n" for x in lines)  # ints past 64 bits too


@given(mutated_lines(STREAMS, max_size=15))
@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_stream_json_of_any_shape_is_a_5xx(octel: TestClient, lines: list[Any]) -> None:
    r = octel.post("/api/v1/agent-runs", json={"task": "t", "result": _text(lines)}, headers=AUTH)
    assert r.status_code < 500, r.text
    if r.status_code == 422:
        assert all(f["field"].startswith("body") for f in r.json()["error"]["fields"]), r.text


def test_a_conversation_no_reader_foresaw_leaves_the_run_stored(
    octel: TestClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fault in the reader: the run is kept, its archive outcome names the error."""

    def broken(data: bytes, **kw: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(telemetry.services.claude.runs, "tree_from_stream", broken)
    text = (FIXTURES / "success_stream.jsonl").read_text()
    r = octel.post("/api/v1/agent-runs", json={"task": "t", "result": text}, headers=AUTH)
    assert r.status_code == 201, r.text
    assert r.json()["archive"]["ok"] is False
    assert "RecursionError" in str(r.json()["archive"]["errors"])
    args = ["--data-dir", str(tmp_path / "cli"), "runs", "add", "-", "--claude-dir", str(tmp_path), "--json"]
    cli = CliRunner().invoke(app, args, input=text)
    assert cli.exit_code == 0, cli.output
    assert "RecursionError" in str(json.loads(cli.stdout)["archive"]["errors"])


@given(mutated_lines(STREAMS, max_size=15))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_stream_reader_reads_any_line_shape(lines: list[Any]) -> None:
    """The conversation itself is read, not only survived (an odd `subtype` was a TypeError)."""
    tree = tree_from_stream(_text(lines).encode())
    prepare_claude_tree(tree, Redactor(b"k" * 32))
