"""`octel runs add` keeps the conversation of a run and links it to the archived session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_lines import FIXTURES
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from archiver.files import read_archive
from cli import app
from telemetry.settings import Settings
from web.app import create_app


def _add(tmp_path: Path, *args: str) -> dict[str, Any]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "runs", "add", *args, "--json"])
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def _archives(tmp_path: Path) -> list[dict[str, Any]]:
    return [read_archive(p) for p in sorted((tmp_path / "data" / "archives").iterdir())]


def test_stream_json_keeps_the_conversation(tmp_path: Path) -> None:
    src = FIXTURES / "d2_subagent_background" / "stream-json.stdout.jsonl"
    got = _add(tmp_path, str(src), "--task", "t1", "--claude-dir", str(tmp_path / "none"))
    assert got["archive"]["ok"] and got["archive"]["root_session_id"] == got["run"]["session_id"]
    root, child = sorted(_archives(tmp_path), key=lambda d: d["depth"])
    assert root["session_id"] == got["run"]["session_id"] and root["label"] == "t1"
    assert root["source"]["origin"] == "stream-json" and len(root["claude"]["results"]) == 2
    assert child["parent_session_id"] == root["session_id"]
    # adding the same output again stores the run once and keeps one archive per session
    again = _add(tmp_path, str(src), "--task", "t1", "--claude-dir", str(tmp_path / "none"))
    assert not again["created"] and len(_archives(tmp_path)) == 2


def test_the_transcript_is_preferred_when_it_is_there(tmp_path: Path) -> None:
    run = FIXTURES / "d_subagent_tree"
    got = _add(tmp_path, str(run / "json.stdout.json"), "--claude-dir", str(run / "json"))
    root = next(d for d in _archives(tmp_path) if d["depth"] == 0)
    assert root["session_id"] == got["run"]["session_id"] and root["source"]["origin"] == "transcript"
    assert root["cost_check"]["reported_from"] == "result" and not root["cost_check"]["mismatch"]
    assert root["cost_check"]["reported_usd"] == got["run"]["cost_usd"]


def test_json_without_its_transcript_and_no_archive(tmp_path: Path) -> None:
    src = FIXTURES / "a_text_answer" / "json.stdout.json"
    assert _add(tmp_path, str(src), "--claude-dir", str(tmp_path))["archive"] is None
    src = FIXTURES / "b_bash_tool" / "stream-json.stdout.jsonl"
    assert _add(tmp_path, str(src), "--no-archive")["archive"] is None
    assert not (tmp_path / "data" / "archives").exists()


def _costs(tmp_path: Path) -> dict[str, Any]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "costs", "--by", "model", "--json"])
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


@pytest.mark.parametrize("archive", ["--archive", "--no-archive"])
def test_a_run_and_its_archived_sessions_are_costed_once(tmp_path: Path, archive: str) -> None:
    run = FIXTURES / "d_subagent_tree"
    _add(tmp_path, str(run / "json.stdout.json"), "--claude-dir", str(run / "json"), archive)
    costs = _costs(tmp_path)
    assert costs["totals"]["cost_usd"] == pytest.approx(0.174432)
    assert {s["source"] for r in costs["breakdowns"]["model"] for s in r["sources"]} == {"claude"}


def test_the_ingest_api_keeps_a_stream_json_conversation(settings: Settings, auth: dict[str, str]) -> None:
    text = (FIXTURES / "d2_subagent_background" / "stream-json.stdout.jsonl").read_text()
    plain = json.loads((FIXTURES / "a_text_answer" / "json.stdout.json").read_text())
    with TestClient(create_app(settings)) as client:
        r = client.post("/api/v1/agent-runs", json={"task": "t1", "result": text}, headers=auth)
        assert r.status_code == 201, r.text
        kept = r.json()["archive"]
        assert kept["ok"] and kept["sessions"] == 2
        root = client.get(f"/api/sessions/{kept['root_session_id']}")
        assert root.status_code == 200 and root.json()["session"]["label"] == "t1"
        again = client.post("/api/v1/agent-runs", json={"task": "t1", "result": text}, headers=auth)
        assert again.status_code == 200 and again.json()["archive"]["ok"]
        assert (
            client.post("/api/v1/agent-runs", json={"result": plain}, headers=auth).json()["archive"] is None
        )
        bad = client.post(
            "/api/v1/agent-runs", json={"result": text[: len(text) // 2] + "\n{oops"}, headers=auth
        )
        assert bad.status_code == 422 and bad.json()["error"]["fields"][0]["field"] == "body.result"
    assert len(list(settings.archives.iterdir())) == 2


@pytest.mark.parametrize(
    ("result", "kind"),
    [
        # the output-token limit: the CLI says success and is_error at once
        (
            {"result": "API Error: Claude's response exceeded the 32000 output token maximum."},
            "max_output_tokens",
        ),
        ({"result": "API Error: 529 Overloaded.", "terminal_reason": "api_error"}, "api_error"),
        ({"result": "something else", "terminal_reason": "completed"}, "error"),
    ],
)
def test_error_kind_follows_is_error_and_the_text_not_the_subtype(
    tmp_path: Path, result: dict[str, Any], kind: str
) -> None:
    from archiver.record import record_from_doc

    lines = (FIXTURES / "a_text_answer" / "stream-json.stdout.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    assert last["type"] == "result"
    last = {k: v for k, v in last.items() if k != "terminal_reason"}
    last |= {"subtype": "success", "is_error": True} | result
    src = tmp_path / "out.jsonl"
    src.write_text("\n".join([*lines[:-1], json.dumps(last)]) + "\n")
    _add(tmp_path, str(src), "--claude-dir", str(tmp_path / "none"))
    root = next(d for d in _archives(tmp_path) if d["depth"] == 0)
    assert record_from_doc(root, "a", "h").error_kind == kind
