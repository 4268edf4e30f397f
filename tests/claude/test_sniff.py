"""Every Claude Code file is read or named, whatever its name: `octel detect` and `octel import
claude` tell a file by its content (subagent files, stream-json as .log or .json, transcripts a
hook rewrote as one JSON array, a run's result), and a folder of transcripts in a layout they
do not read says what it found."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES
from typer.testing import CliRunner

from archiver.claude.sniff import kind_of
from cli import app

_DOOM = FIXTURES / "c_doom_loop"


def _detect(tmp_path: Path, path: Path) -> tuple[int, dict[str, Any] | str]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "detect", str(path), "--json"])
    try:
        return r.exit_code, dict(json.loads(r.stdout))
    except ValueError:
        return r.exit_code, r.output


def _transcript(run: str) -> Path:
    return next((FIXTURES / run / "json" / "projects").glob("*/*.jsonl"))


@pytest.mark.parametrize("name", ["run.log", "run.json", "output.txt"])
def test_stream_json_of_any_name_is_judged(tmp_path: Path, name: str) -> None:
    path = shutil.copy(_DOOM / "stream-json.stdout.jsonl", tmp_path / name)
    code, doc = _detect(tmp_path, Path(path))
    assert code == 0 and isinstance(doc, dict) and doc["verdict"] == "stuck", doc


def test_a_transcript_rewritten_as_one_json_array_is_judged(tmp_path: Path) -> None:
    lines = [orjson.loads(x) for x in _transcript("c_doom_loop").read_bytes().splitlines() if x.strip()]
    path = tmp_path / "session.json"
    path.write_bytes(orjson.dumps(lines, option=orjson.OPT_INDENT_2))
    code, doc = _detect(tmp_path, path)
    assert code == 0 and isinstance(doc, dict) and doc["verdict"] == "stuck", doc


def test_a_subagent_file_on_its_own_has_its_messages(tmp_path: Path) -> None:
    (sub,) = (FIXTURES / "d_subagent_tree" / "json" / "projects").glob("*/*/subagents/agent-*.jsonl")
    for name in (sub.name, "renamed.jsonl"):
        path = shutil.copy(sub, tmp_path / name)
        code, doc = _detect(tmp_path, Path(path))
        assert code == 0 and isinstance(doc, dict) and doc["messages"] > 0 and doc["verdict"], doc


def test_a_result_file_is_pointed_to_runs_add(tmp_path: Path) -> None:
    path = shutil.copy(_DOOM / "json.stdout.json", tmp_path / "result.json")
    code, out = _detect(tmp_path, Path(path))
    assert code == 2 and "octel runs add" in " ".join(str(out).split())


@pytest.mark.parametrize("name", ["success.json", "error_max_turns.json", "error_during_execution.json"])
def test_a_pretty_printed_result_file_is_pointed_to_runs_add(tmp_path: Path, name: str) -> None:
    """A result kept over several lines (`jq .`, an editor) was "not a session" with its keys."""
    code, out = _detect(tmp_path, FIXTURES / name)
    assert code == 2 and "is the result of a Claude Code run" in " ".join(str(out).split())
    assert "octel runs add" in " ".join(str(out).split())


def test_a_pretty_printed_result_cut_at_the_head_is_still_a_result() -> None:
    pretty = orjson.dumps(orjson.loads((FIXTURES / "success.json").read_bytes()), option=orjson.OPT_INDENT_2)
    head = pretty + b" " * 10
    assert kind_of(head[: len(pretty) // 2]) == "result"
    # JSON Lines whose first line is cut at the head are no result, whatever keys they name
    line = orjson.dumps({"type": "result", "session_id": "s", "num_turns": 1, "pad": "x" * 100})
    assert kind_of(line[:-10] + b"\n" + line[:-20]) is None


def test_a_workflow_journal_is_named_not_read_as_nothing(tmp_path: Path) -> None:
    """A Workflow run's journal names its session on its result lines: it was taken for a
    transcript with no messages ("no messages in it")."""
    (journal,) = (FIXTURES / "w_workflow_run").rglob("journal.jsonl")
    assert kind_of(journal.read_bytes()) == "journal"
    code, out = _detect(tmp_path, journal)
    text = " ".join(str(out).split())
    assert code == 2 and "journal of a Claude Code Workflow run" in text and "agent-*.jsonl" in text
    assert "no messages" not in text
    # the folder it lies in: its agents are judged, the journal named
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "detect", str(journal.parent)])
    assert "agent-a4f5e6e5240ea7a78.jsonl (4 messages)" in r.output and "journal of a Claude" in r.output


def test_kinds_come_from_the_lines_not_the_name() -> None:
    assert kind_of(_transcript("a_text_answer").read_bytes()) == "transcript"
    assert kind_of((_DOOM / "stream-json.stdout.jsonl").read_bytes()) == "stream"
    assert kind_of((_DOOM / "json.stdout.json").read_bytes()) == "result"
    assert kind_of(b'{"schema_version": 3, "claude": {"results": [{"type": "result"}]}}') is None
    assert kind_of(b'[{"info": {"sessionID": "s"}, "parts": []}]') is None  # an OpenCode message list


def test_a_backup_layout_is_named_not_read_as_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "claude"
    shutil.copy(
        _transcript("a_text_answer"),
        (cfg / "projects" / "-p" / "sessions").mkdir(parents=True)
        or cfg / "projects" / "-p" / "sessions" / "s.jsonl",
    )
    r = CliRunner().invoke(
        app, ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg), "--json"]
    )
    report = json.loads(r.stdout)
    (problem,) = report["problems"]
    assert report["sessions"] == 0 and problem["error_kind"] == "unknown_layout"
    assert "sessions/s.jsonl" in problem["message"]
