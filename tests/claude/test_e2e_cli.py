"""The real Claude Code CLI against the fake API, then octel on what it left: the result through
`octel runs add`, the transcripts archived, indexed, costed and scored, `octel why` on them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from claude_cli import ClaudeRun, run_claude
from fake_api import Answer, Fail, FakeAnthropic, Step, fake_anthropic
from typer.testing import CliRunner

from archiver.claude.convert import from_claude
from archiver.files import read_archive
from cli import app
from detectors.model import Retry, ToolCall

pytestmark = pytest.mark.claude

JSON = ("--output-format", "json")
STREAM = ("--output-format", "stream-json", "--verbose")
BASH_FAIL = ("Bash", {"command": "cat missing.txt", "description": "Show missing.txt"})


def _run(
    tmp: Path, main: list[Step], *args: str, sub: list[Step] | None = None
) -> tuple[ClaudeRun, FakeAnthropic]:
    with fake_anthropic(main, sub) as fake:
        run = run_claude(tmp / "run", fake.url, "-p", "Do the task", "--dangerously-skip-permissions", *args)
    assert fake.connects == 0  # nothing tried to leave loopback
    return run, fake


def _octel(tmp: Path, *args: str, stdin: str | None = None) -> Any:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp / "data"), *args, "--json"], input=stdin)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _add(tmp: Path, run: ClaudeRun) -> dict[str, Any]:
    out = _octel(
        tmp,
        "runs",
        "add",
        "-",
        "--claude-dir",
        str(run.config_dir),
        "--exit-code",
        str(run.exit_code),
        "--task",
        "e2e",
        stdin=run.stdout,
    )
    assert out["archive"] is not None and out["archive"]["ok"], out
    return dict(out)


def _docs(tmp: Path) -> list[dict[str, Any]]:
    docs = [read_archive(p) for p in (tmp / "data" / "archives").iterdir()]
    return sorted(docs, key=lambda d: d["depth"])


def test_a_plain_answer(tmp_path: Path) -> None:
    run, fake = _run(tmp_path, [Answer("Hello from the fake model.")], *JSON)
    assert run.exit_code == 0 and fake.seen == ["main"]
    added = _add(tmp_path, run)
    (root,) = _docs(tmp_path)
    assert root["session_id"] == added["run"]["session_id"] and root["source"]["origin"] == "transcript"
    assert root["source"]["claude_version"] == "2.1.328" and root["totals"]["turns"] == 1
    check = root["cost_check"]
    assert check["reported_from"] == "result" and not check["mismatch"]
    assert check["computed_usd"] == pytest.approx(added["run"]["cost_usd"])
    assert _octel(tmp_path, "why", root["session_id"])["code"] == "completed"


def test_a_bash_call_through_stream_json(tmp_path: Path) -> None:
    main = [
        Answer("Running it.", tools=[("Bash", {"command": "echo octel-e2e", "description": "Print"})]),
        Answer("It printed octel-e2e."),
    ]
    run, _ = _run(tmp_path, main, *STREAM)
    assert run.exit_code == 0
    _add(tmp_path, run)
    (root,) = _docs(tmp_path)
    calls = [p for m in from_claude(root["messages"]).messages for p in m.parts if isinstance(p, ToolCall)]
    assert [(c.tool, c.status) for c in calls] == [("bash", "completed")] and "octel-e2e" in calls[0].output
    assert root["per_turn"][0]["tool_calls"] == 1 and root["verdict"] == "healthy"
    assert len(root["claude"]["results"]) == 1 and not root["cost_check"]["mismatch"]


def test_the_same_failing_command_repeated(tmp_path: Path) -> None:
    run, _ = _run(
        tmp_path, [*[Answer(tools=[BASH_FAIL]) for _ in range(6)], Answer("The file is missing.")], *JSON
    )
    assert run.exit_code == 0
    added = _add(tmp_path, run)
    sid = added["run"]["session_id"]
    (root,) = _docs(tmp_path)
    assert {f["detector"]: f["verdict"] for f in root["findings"]}["doom_loop"] == "stuck"
    assert root["totals"]["tool_errors"] == 6
    assert _octel(tmp_path, "why", sid)["code"] == "loop_detected"
    (transcript,) = run.config_dir.glob(f"projects/*/{sid}.jsonl")
    assert _octel(tmp_path, "detect", str(transcript))["verdict"] == "stuck"


def test_a_subagent_that_runs_a_tool(tmp_path: Path) -> None:
    launch = (
        "Agent",
        {
            "description": "List files",
            "prompt": "List the files with ls.",
            "subagent_type": "general-purpose",
            "run_in_background": False,
        },
    )
    main = [Answer("Delegating.", tools=[launch]), Answer("The subagent found two files.")]
    sub = [
        Answer(tools=[("Bash", {"command": "ls", "description": "List files"})]),
        Answer("README.md and calc.py"),
    ]
    run, fake = _run(tmp_path, main, *JSON, sub=sub)
    assert run.exit_code == 0 and fake.seen.count("subagent") == 2
    added = _add(tmp_path, run)
    root, child = _docs(tmp_path)
    assert child["parent_session_id"] == root["session_id"] and child["depth"] == 1
    assert child["agent"] == "general-purpose" and child["subagent_title"] == "List files"
    assert child["per_turn"][0]["tool_calls"] == 1
    assert root["subtree"]["sessions"] == 2
    assert root["subtree"]["cost"] == pytest.approx(added["run"]["cost_usd"])  # subagents included
    tree = _octel(tmp_path, "sessions", "tree", root["session_id"])
    assert json.dumps(tree).count(child["session_id"]) >= 1


def test_overloaded_twice_then_an_answer(tmp_path: Path) -> None:
    run, fake = _run(tmp_path, [Fail(529), Fail(529), Answer("Hello after the retries.")], *JSON)
    assert run.exit_code == 0 and fake.seen == ["main"] * 3
    _add(tmp_path, run)
    (root,) = _docs(tmp_path)
    retries = [
        p.attempt for m in from_claude(root["messages"]).messages for p in m.parts if isinstance(p, Retry)
    ]
    assert retries == [1, 2] and root["totals"]["turns"] == 1 and not root["cost_check"]["mismatch"]


def test_max_turns_reached(tmp_path: Path) -> None:
    echo = [Answer(tools=[("Bash", {"command": f"echo {i}", "description": "Print"})]) for i in range(5)]
    run, _ = _run(tmp_path, echo, *JSON, "--max-turns", "2")
    assert run.exit_code == 1 and json.loads(run.stdout)["subtype"] == "error_max_turns"
    added = _add(tmp_path, run)
    assert added["run"]["is_error"] and added["run"]["subtype"] == "error_max_turns"
    shown = _octel(tmp_path, "sessions", "show", added["run"]["session_id"])
    assert shown["session"]["error_kind"] == "error_max_turns"
    assert _octel(tmp_path, "why", added["run"]["session_id"])["code"] == "error"
