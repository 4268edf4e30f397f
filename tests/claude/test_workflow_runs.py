"""A Workflow run's summary file (``<sessionId>/workflows/<runId>.json``): kept on the root's
archive with its status, names, timings and counts; never added to the totals; a bad file is
reported and skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from claude_lines import FIXTURES
from typer.testing import CliRunner

from archiver.archive import serialise
from archiver.claude.document import build_claude_documents
from archiver.claude.layout import find_sessions, session_files
from archiver.claude.loading import load_tree
from archiver.claude.runs import RunFile, read_runs
from archiver.redact import Redactor
from cli import app

RUN = "wf_3c1d9a7e-5b2"
SID = "7f3b2c10-9e4d-4a61-b0c2-5d8e1f2a3b4c"
SRC = FIXTURES / "w_workflow_run"
AT = "2026-11-30T12:00:00+00:00"
SCHEMA = orjson.loads((Path(__file__).parents[2] / "schemas" / "archive-v3.json").read_bytes())


@pytest.fixture
def config(tmp_path: Path) -> Path:
    shutil.copytree(SRC / "projects", tmp_path / "claude" / "projects")
    return tmp_path / "claude"


def _run_file(config: Path) -> Path:
    return config / "projects" / "-home-dev-project" / SID / "workflows" / f"{RUN}.json"


def _root_doc(config: Path) -> dict[str, Any]:
    (files,) = find_sessions(config)
    docs = build_claude_documents(load_tree(files), archived_at=AT)
    for doc in docs:  # as written: redacted, then checked against the published schema
        jsonschema.validate(orjson.loads(serialise(doc, Redactor(b"0" * 32))[0]), SCHEMA)
    return docs[0]


def test_the_root_keeps_the_run_summary(config: Path) -> None:
    root = _root_doc(config)
    (run,) = root["claude"]["workflow_runs"]
    assert {k: run[k] for k in run if k not in ("run", "path")} == {
        "run_id": RUN,
        "workflow_name": "survey",
        "title": "Survey the repository",
        "status": "failed",
        "started": 1796054264678,
        "duration_ms": 512,
        "agent_count": 3,
        "total_tokens": 25392,
        "total_tool_calls": 2,
        "default_model": "claude-opus-5-5",
        "error": "agent 'review' failed: the agent ended without a result",
        "summary": None,
    }
    assert run["path"] == str(_run_file(config))
    assert run["run"] == orjson.loads(_run_file(config).read_bytes())  # kept whole: script, phases…


def test_the_run_counts_nothing(config: Path) -> None:
    """Its total_tokens is the CLI's own count of the agents' usage: shown, never added."""
    with_run = _root_doc(config)
    _run_file(config).unlink()
    without = _root_doc(config)
    assert "workflow_runs" not in without["claude"]
    for key in ("totals", "subtree", "per_turn"):
        assert with_run[key] == without[key]


@pytest.mark.parametrize(
    "data",
    [b'{"runId": "wf_3c1d9a7e-5b2", "status": "compl', b"[1, 2]", b"", b"\xff\xfe"],
    ids=["cut-short", "not-an-object", "empty", "not-utf8"],
)
def test_a_bad_run_file_is_reported_and_skipped(config: Path, data: bytes) -> None:
    _run_file(config).write_bytes(data)
    (files,) = find_sessions(config)
    tree = load_tree(files)
    assert tree.workflow_runs == []
    bad = [e for e in tree.errors if e.what == "workflow_run"]
    assert [(e.error_kind, e.path) for e in bad] == [("malformed", str(_run_file(config)))]
    assert len(tree.sessions) == 4  # the run's agents are read as before


def test_unknown_shapes_keep_the_object_and_leave_fields_null() -> None:
    data = {"status": "paused", "durationMs": "fast", "agentCount": True, "totalTokens": -3, "newField": [1]}
    runs, errors = read_runs([RunFile("x.json", "wf_x", orjson.dumps(data))])
    assert errors == []
    (run,) = runs
    assert (run["run_id"], run["status"], run["duration_ms"], run["agent_count"], run["total_tokens"]) == (
        "wf_x",
        "paused",  # a status a newer CLI writes is kept as it is
        None,
        None,
        None,
    )
    assert run["run"] == data and run["started"] is None
    # as the CLI reads an old file: no status is failed with an error, else completed
    (failed,), _ = read_runs(
        [RunFile("y.json", "wf_y", b'{"error": "boom", "timestamp": "2026-11-30T00:00:00Z"}')]
    )
    assert (failed["status"], failed["started"]) == ("failed", 1795996800000)
    (done,), _ = read_runs([RunFile("z.json", "wf_z", b"{}")])
    assert done["status"] == "completed"


def test_the_run_file_is_one_of_the_session_files(config: Path) -> None:
    """A run that ends (its file appears or changes) makes a re-import open the session."""
    (files,) = find_sessions(config)
    assert _run_file(config) in list(files.paths())
    again = session_files(config, SID)
    assert again is not None and again.runs == files.runs == [_run_file(config)]


def _import(tmp_path: Path, cfg: Path) -> dict[str, Any]:
    r = CliRunner().invoke(
        app, ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg), "--json"]
    )
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def _archived_runs(tmp_path: Path) -> list[dict[str, Any]]:
    (path,) = [p for p in (tmp_path / "data" / "archives").glob("*.json") if "__sub0__" in p.name]
    return list(orjson.loads(path.read_bytes())["claude"]["workflow_runs"])


def test_import_archives_the_run_and_a_rewritten_run_file_again(tmp_path: Path, config: Path) -> None:
    run_file = _run_file(config)
    summary = orjson.loads(run_file.read_bytes())
    run_file.unlink()  # the run is still going: no summary yet
    first = _import(tmp_path, config)
    assert first["archived"] == 1 and not [p for p in first["problems"] if p["what"] == "workflow_run"]
    (root,) = (tmp_path / "data" / "archives").glob("*__sub0__*.json")
    assert "workflow_runs" not in orjson.loads(root.read_bytes())["claude"]
    run_file.parent.mkdir(exist_ok=True)
    run_file.write_bytes(orjson.dumps(summary))  # the run ended
    again = _import(tmp_path, config)
    assert again["archived"] == 1 and again["resumed"] == 1  # the transcripts did not grow
    assert [(r["run_id"], r["status"]) for r in _archived_runs(tmp_path)] == [(RUN, "failed")]
    run_file.write_bytes(orjson.dumps({**summary, "status": "killed", "error": None}))
    _import(tmp_path, config)
    assert [(r["run_id"], r["status"]) for r in _archived_runs(tmp_path)] == [(RUN, "killed")]
    assert _import(tmp_path, config)["unchanged"] == 1
