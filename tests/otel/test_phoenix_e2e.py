"""End to end: a real `opencode serve` runs a tree whose subagent loops; octel archives it,
exports it to a real Arize Phoenix, and Phoenix's REST API shows the same tree.

With OCTEL_OTEL_SCREENSHOT=path.png the test also has Chromium photograph Phoenix's trace view.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from driver import run_prompt
from fakellm import FakeLLM
from opencode_harness import OpenCode
from realparts import which
from sqlmodel import select
from typer.testing import CliRunner

from cli import app
from telemetry.archiving import archive_session_tree_async
from telemetry.otel_export.mapping import tree_spans
from telemetry.otel_export.sources import load_tree
from telemetry.otel_export.spans import trace_id
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

pytestmark = [pytest.mark.opencode, pytest.mark.phoenix]

LOOP = {"name": "bash", "arguments": {"command": "git status --short"}}
SCRIPT = {
    "title": "Tidy the repository",
    "turns": [
        {
            "text": "Delegating the check.",
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "description": "Check the status",
                        "subagent_type": "general",
                        "prompt": "Check the repository status until it is clean.",
                    },
                }
            ],
        },
        *[{"tool_calls": [LOOP]} for _ in range(6)],  # the subagent repeats itself: a doom loop
        {"text": "Subagent: the status is unchanged."},
        {"text": "Root: the subagent reported back."},
    ],
}


def _archive(settings: Settings, url: str, root: str) -> None:
    async def go() -> Any:
        async with httpx.AsyncClient(timeout=15.0) as http:
            return await archive_session_tree_async(root, settings=settings, server_url=url, http=http)

    out = asyncio.run(go())
    assert out.ok, out.to_dict()


def _spans(phoenix: str, project: str, want: int) -> list[dict[str, Any]]:
    """Every span of the project, once Phoenix has stored ``want`` of them (ingestion is async)."""
    deadline = time.monotonic() + 60
    while True:
        r = httpx.get(f"{phoenix}/v1/projects/{project}/spans", params={"limit": 1000}, timeout=10)
        data = r.json()["data"] if r.status_code == 200 else []
        if len(data) >= want or time.monotonic() > deadline:
            return list(data)
        time.sleep(0.5)


def _screenshot(phoenix: str, trace: str, out: Path) -> None:
    chromium = which("chromium", "chromium-browser")
    assert chromium, "chromium is needed for the screenshot"
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1500,900",
            "--virtual-time-budget=20000",
            f"--screenshot={out}",
            f"{phoenix}/redirects/traces/{trace}",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def test_a_real_tree_in_phoenix(
    opencode: OpenCode, fake_llm: FakeLLM, phoenix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.load(SCRIPT)
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        root = run_prompt(http, "Tidy the repository; use a subagent.", timeout=240)["root"]
    project = "octel-e2e"
    settings = Settings(data_dir=tmp_path / "data", otel_service_name=project, _env_file=None)  # type: ignore[call-arg]
    _archive(settings, opencode.url, root)
    engine = make_engine(settings.db_url)
    with session_scope(engine, write=False) as db:
        rows = {r.session_id: r for r in db.exec(select(SessionIndex)).all()}
    engine.dispose()
    child = next(r for r in rows.values() if r.depth == 1)
    assert child.agent == "general" and child.worst_detector == "doom_loop", "the subagent loops"

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", phoenix)
    base = ["--data-dir", str(settings.data_dir)]
    env = {"OCTEL_OTEL_SERVICE_NAME": project}
    first = CliRunner().invoke(app, [*base, "export", "otel", root], env=env, catch_exceptions=False)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*base, "export", "otel", root], env=env, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    engine = make_engine(settings.db_url)
    with session_scope(engine, write=False) as db:
        expected = len(tree_spans(load_tree(db, settings.archives, root).docs))
    engine.dispose()

    spans = _spans(phoenix, project, expected)
    time.sleep(2)  # a second copy, had there been one, would be in by now
    spans = _spans(phoenix, project, expected)
    assert len(spans) == expected, "exporting twice leaves one trace, not a copy"
    tid = f"{trace_id(root):032x}"
    assert {s["context"]["trace_id"] for s in spans} == {tid}
    by_id = {s["context"]["span_id"]: s for s in spans}

    agent = next(s for s in spans if s["name"] == "invoke_agent general")
    launcher = by_id[agent["parent_id"]]
    assert launcher["name"] == "execute_tool task" and launcher["span_kind"] == "TOOL"
    assert by_id[launcher["parent_id"]]["span_kind"] == "LLM"
    kinds = {s["name"].split()[0]: s["span_kind"] for s in spans}
    assert kinds == {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}

    octel_total = rows[root].subtree_tokens
    llm = [s for s in spans if s["span_kind"] == "LLM"]
    assert sum(int(s["attributes"]["llm.token_count.total"]) for s in llm) == octel_total
    assert len(llm) == sum(r.turn_count for r in rows.values())

    sessions = httpx.get(f"{phoenix}/v1/projects/{project}/sessions", timeout=10).json()["data"]
    assert [s["session_id"] for s in sessions] == [root]
    assert [t["trace_id"] for t in sessions[0]["traces"]] == [tid]
    assert sessions[0]["token_count_total"] == octel_total

    events = [e for e in agent["events"] if e["name"] == "gen_ai.evaluation.result"]
    doom = [e for e in events if e["attributes"]["gen_ai.evaluation.name"] == "doom_loop"]
    assert len(doom) == 1 and doom[0]["attributes"]["gen_ai.evaluation.score.label"] == child.verdict

    shot = os.environ.get("OCTEL_OTEL_SCREENSHOT")
    if shot:
        _screenshot(phoenix, tid, Path(shot))
