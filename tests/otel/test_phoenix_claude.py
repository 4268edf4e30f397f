"""End to end: a Claude Code tree captured from the real CLI (a subagent launched by the Agent
tool, tests/fixtures/claude/d_subagent_tree) is imported by octel, exported to a real Arize
Phoenix, and Phoenix's REST API shows one connected trace with octel's token totals."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select
from typer.testing import CliRunner

from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from cli import app
from telemetry.otel_export.spans import trace_id
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

pytestmark = [pytest.mark.phoenix]

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "claude" / "d_subagent_tree" / "json"
PROJECT = "octel-claude-e2e"


def _spans(phoenix: str, want: int) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60
    while True:
        r = httpx.get(f"{phoenix}/v1/projects/{PROJECT}/spans", params={"limit": 1000}, timeout=10)
        data = r.json()["data"] if r.status_code == 200 else []
        if len(data) >= want or time.monotonic() > deadline:
            return list(data)
        time.sleep(0.5)


def test_a_claude_tree_in_phoenix(phoenix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "claude"
    shutil.copytree(RUN, cfg)
    (files,) = find_sessions(cfg)
    root = load_tree(files).root_id
    base = ["--data-dir", str(tmp_path / "data")]
    imported = CliRunner().invoke(app, [*base, "import", "claude", str(cfg)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    env = {"OCTEL_OTEL_SERVICE_NAME": PROJECT}
    out = []
    for _ in range(2):  # exporting twice leaves one trace
        r = CliRunner().invoke(
            app, [*base, "export", "otel", root, "--json"], env=env, catch_exceptions=False
        )
        assert r.exit_code == 0, r.output
        out.append(json.loads(r.stdout))
    expected = out[0]["spans"]
    assert out[0]["exported"] == out[1]["exported"] == expected > 0

    spans = _spans(phoenix, expected)
    time.sleep(2)  # a second copy, had there been one, would be in by now
    spans = _spans(phoenix, expected)
    assert len(spans) == expected
    tid = f"{trace_id(root):032x}"
    assert {s["context"]["trace_id"] for s in spans} == {tid}
    by_id = {s["context"]["span_id"]: s for s in spans}
    assert all(s["parent_id"] is None or s["parent_id"] in by_id for s in spans), "one connected trace"

    sub = next(s for s in spans if s["name"] == "invoke_agent general-purpose")
    launcher = by_id[sub["parent_id"]]
    assert launcher["name"] == "execute_tool Agent" and launcher["span_kind"] == "TOOL"
    assert by_id[launcher["parent_id"]]["span_kind"] == "LLM"
    assert by_id[by_id[launcher["parent_id"]]["parent_id"]]["name"] == "invoke_agent main"
    kinds = {s["name"].split()[0]: s["span_kind"] for s in spans}
    assert kinds == {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}

    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    with session_scope(engine, write=False) as db:
        rows = {r.session_id: r for r in db.exec(select(SessionIndex)).all()}
    engine.dispose()
    octel_total = rows[root].subtree_tokens
    llm = [s for s in spans if s["span_kind"] == "LLM"]
    assert sum(int(s["attributes"]["llm.token_count.total"]) for s in llm) == octel_total > 0
    assert len(llm) == sum(r.turn_count for r in rows.values())

    sessions = httpx.get(f"{phoenix}/v1/projects/{PROJECT}/sessions", timeout=10).json()["data"]
    assert [s["session_id"] for s in sessions] == [root]
    assert [t["trace_id"] for t in sessions[0]["traces"]] == [tid]
    assert sessions[0]["token_count_total"] == octel_total

    # and `octel doctor` finds Phoenix taking trace exports (an empty one adds nothing)
    r = CliRunner().invoke(app, [*base, "doctor", "--json"], catch_exceptions=False)
    checks = {c["name"]: c for c in json.loads(r.stdout)["checks"]}
    assert checks["otlp endpoint"]["status"] == "ok", checks["otlp endpoint"]
    assert len(_spans(phoenix, expected)) == expected
