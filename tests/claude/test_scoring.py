"""Claude Code sessions through the detectors: the converter, and `octel detect` on transcripts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_lines import FIXTURES, assistant, jsonl, tool_result, tool_use, user
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import detectors
from archiver.claude.convert import from_claude
from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.claude.tree import SubagentFile, build_tree
from cli import app
from detectors.model import Reasoning, Retry, ToolCall


def _main(run: str) -> list[dict[str, object]]:
    (files,) = find_sessions(FIXTURES / run / "json")
    return load_tree(files).sessions[0].messages


def _transcript(run: str) -> Path:
    (files,) = find_sessions(FIXTURES / run / "json")
    assert files.main is not None
    return files.main


@pytest.mark.parametrize("run", ["a_text_answer", "b_bash_tool", "d_subagent_tree", "e2_retry_429_500"])
def test_healthy_runs_read_healthy(run: str) -> None:
    for s in (lambda f: load_tree(f))(find_sessions(FIXTURES / run / "json")[0]).sessions:
        c = from_claude(s.messages)
        assert detectors.worst_verdict(
            detectors.score(c.messages, status=c.status, permissions=c.permissions)
        ) == ("healthy")


def test_the_same_failing_command_is_a_doom_loop() -> None:
    c = from_claude(_main("c_doom_loop"))
    calls = [p for m in c.messages for p in m.parts if isinstance(p, ToolCall)]
    assert len(calls) == 6 and {(x.tool, x.status, x.exit_code) for x in calls} == {("bash", "error", 1)}
    found = {f.detector: f.verdict for f in detectors.score(c.messages)}
    assert found["doom_loop"] == "stuck"


def test_thinking_tool_use_and_results() -> None:
    c = from_claude(_main("b_bash_tool"))
    first = next(m for m in c.messages if m.role == "assistant")
    kinds = [type(p) for p in first.parts]
    assert kinds[0] is Reasoning and kinds[-1] is ToolCall
    call = first.parts[-1]
    assert isinstance(call, ToolCall) and call.status == "completed" and call.output and call.tool == "bash"


def test_api_errors_are_retries_and_an_exhausted_run_ends_in_an_error_turn() -> None:
    retries = [
        p.attempt for m in from_claude(_main("e_retry_529")).messages for p in m.parts if isinstance(p, Retry)
    ]
    assert retries == [1, 2]
    last = [m for m in from_claude(_main("e3_retries_exhausted")).messages if m.role == "assistant"][-1]
    assert last.error == "APIError" and "529" in last.error_message


def test_max_turns_is_kept() -> None:
    c = from_claude(_main("f_max_turns"))
    assert any(m.role == "system" and m.error == "MaxTurnsReached" for m in c.messages)


def test_permission_denials_become_rejected_asks() -> None:
    result = {
        "type": "result",
        "permission_denials": [{"tool_name": "Bash", "tool_use_id": "t1", "tool_input": {}}],
    }
    c = from_claude([], [result])
    assert [(p.kind, p.permission, p.reply) for p in c.permissions] == [
        ("asked", "bash", ""),
        ("replied", "bash", "reject"),
    ]


def test_replayed_messages_are_not_scored_twice() -> None:
    shared = assistant("s", "m1", [tool_use("c1", command="false")])
    sub = [user("s", "go", agentId="ab"), *shared]
    tree = build_tree(
        "s", jsonl([user("s", "go"), *shared]), [SubagentFile("agent-ab.jsonl", "ab", jsonl(sub))]
    )
    assert [m.id for m in from_claude(tree.sessions[1].messages).messages] == [
        tree.sessions[1].messages[0]["info"]["id"]
    ]


_CALLS = st.tuples(st.sampled_from(["Bash", "Read", "Edit", "Agent"]), st.sampled_from([None, True, False]))


@given(st.lists(_CALLS, max_size=8))
def test_every_call_gets_the_outcome_of_its_result(calls: list[tuple[str, bool | None]]) -> None:
    lines = [user("s", "go")]
    for i, (name, error) in enumerate(calls):
        lines += assistant("s", f"m{i}", [tool_use(f"c{i}", name, x=i)])
        if error is not None:
            lines.append(user("s", tool_result(f"c{i}", "Exit code 2\nno" if error else "ok", error)))
    got = [
        p for m in from_claude(build_tree("s", jsonl(lines)).sessions[0].messages).messages for p in m.parts
    ]
    assert [(p.call_id, p.status) for p in got if isinstance(p, ToolCall)] == [
        (f"c{i}", "pending" if e is None else ("error" if e else "completed"))
        for i, (_, e) in enumerate(calls)
    ]


@pytest.mark.parametrize("form", ["transcript", "stream-json"])
def test_octel_detect_reads_claude_files(form: str, tmp_path: Path) -> None:
    path = (
        _transcript("c_doom_loop")
        if form == "transcript"
        else FIXTURES / "c_doom_loop" / "stream-json.stdout.jsonl"
    )
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path), "detect", str(path), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["verdict"] == "stuck" and doc["findings"][0]["detector"] == "doom_loop"


def test_octel_detect_picks_a_subagent(tmp_path: Path) -> None:
    (files,) = find_sessions(FIXTURES / "d_subagent_tree" / "json")
    sub = load_tree(files).sessions[1].session_id
    r = CliRunner().invoke(
        app,
        [
            "--data-dir",
            str(tmp_path),
            "detect",
            str(_transcript("d_subagent_tree")),
            "--session",
            sub,
            "--json",
        ],
    )
    assert r.exit_code == 0 and json.loads(r.stdout)["messages"] == 4
