"""`octel runs add|list` with the Claude CLI's own result shapes (json and stream-json)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from octelrun import Octel
from sqlmodel import select

from telemetry.store.aggregates import read_all
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun

CLAUDE = Path(__file__).parent.parent / "fixtures" / "claude"
Golden = Callable[[str, Any], None]


@pytest.mark.parametrize(
    ("sample", "subtype", "is_error", "turns", "model"),
    [
        ("success.json", "success", False, 9, "claude-sonnet-4-5-20250929"),
        ("error_max_turns.json", "error_max_turns", True, 31, "claude-sonnet-4-5-20250929"),
        ("error_during_execution.json", "error_during_execution", True, 2, "claude-sonnet-4-5-20250929"),
        ("error_max_budget_usd.json", "error_max_budget_usd", True, 14, "claude-opus-4-1-20250805"),
        ("success_stream.jsonl", "success", False, 2, "claude-sonnet-4-5-20250929"),
    ],
)
def test_add_keeps_subtype_exit_code_and_usage(
    octel: Octel, sample: str, subtype: str, is_error: bool, turns: int, model: str
) -> None:
    text = (CLAUDE / sample).read_text()
    exit_code = "0" if not is_error else "1"
    got = octel.json(
        "runs", "add", "-", "--task", "issue-42", "--agent", "fixer", "--exit-code", exit_code, input=text
    )
    run = got["run"]
    assert got["created"] is True
    assert (run["subtype"], run["is_error"], run["num_turns"], run["model"]) == (
        subtype,
        is_error,
        turns,
        model,
    )
    assert (run["task"], run["agent"], run["exit_code"]) == ("issue-42", "fixer", int(exit_code))
    assert run["cost_usd"] > 0 and run["tokens"]["cache_read"] >= 0


def test_add_reads_the_verbose_event_list(octel: Octel) -> None:
    """`--output-format json --verbose` prints every event as one JSON list; the result is the last."""
    events = [json.loads(line) for line in (CLAUDE / "success_stream.jsonl").read_text().splitlines()]
    got = octel.json("runs", "add", "-", "--task", "t", input=json.dumps(events))
    assert (got["run"]["subtype"], got["run"]["num_turns"], got["run"]["tokens"]["cache_read"]) == (
        "success",
        2,
        8800,
    )


def test_add_from_a_file_is_idempotent_and_counts_once(octel: Octel) -> None:
    path = str(CLAUDE / "success.json")
    first = octel("runs", "add", path, "--task", "t", "--agent", "a", "--exit-code", "0")
    assert first.exit_code == 0 and "recorded run" in first.stdout
    again = octel("runs", "add", path, "--task", "t", "--agent", "a")
    assert again.exit_code == 0 and "already recorded" in again.stdout
    with session_scope(octel.engine, write=False) as db:
        assert len(db.exec(select(AgentRun)).all()) == 1
        counters = {(m, tuple(sorted(lbl.items()))): v for m, lbl, v in read_all(db)}
    key = (
        "agent_runs_total",
        (("agent", "a"), ("model", "claude-sonnet-4-5-20250929"), ("outcome", "success")),
    )
    assert counters[key] == 1


def test_a_run_that_printed_nothing_is_kept_when_it_failed(octel: Octel) -> None:
    got = octel.json("runs", "add", "-", "--task", "t", "--exit-code", "137", input="")
    assert (got["run"]["subtype"], got["run"]["is_error"], got["run"]["exit_code"]) == (
        "error_no_result",
        True,
        137,
    )
    r = octel("runs", "add", "-", input="  \n")
    assert r.exit_code == 2 and "input is empty" in r.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("runs", "add", "-"), "not json at all", "not a Claude CLI result"),
        (("runs", "add", "-"), '{"type": "assistant"}', "type must be 'result'"),
        (("runs", "add", "-"), '{"type": "result", "usage": {"input_tokens": "many"}}', "usage.input_tokens"),
        (("runs", "add", "/no/such/file.json"), None, "no such file"),
        (("runs", "list", "--since", "later"), None, "--since"),
    ],
)
def test_bad_input_exits_2(octel: Octel, args: tuple[str, ...], stdin: str | None, message: str) -> None:
    r = octel(*args, input=stdin)
    assert r.exit_code == 2, r.output
    assert message in r.stderr
    assert "Traceback" not in r.stderr


def test_list_table_json_and_filters(octel: Octel, golden: Golden) -> None:
    for sample, agent in (
        ("success.json", "a"),
        ("error_max_turns.json", "b"),
        ("error_during_execution.json", "b"),
    ):
        assert octel("runs", "add", str(CLAUDE / sample), "--agent", agent, "--task", sample).exit_code == 0
    r = octel("runs", "list")
    assert r.exit_code == 0
    assert "error_max_turns" in r.stdout and "success" in r.stdout
    assert len(octel.json("runs", "list")["items"]) == 3
    errors = octel.json("runs", "list", "--errors", "--agent", "b")
    assert {x["subtype"] for x in errors["items"]} == {"error_max_turns", "error_during_execution"}
    page = octel.json("runs", "list", "--limit", "2")
    rest = octel.json("runs", "list", "--limit", "2", "--cursor", page["next_cursor"])
    assert len(page["items"]) == 2 and len(rest["items"]) == 1 and rest["next_cursor"] is None
    one = octel.json("runs", "list", "--task", "success.json")
    for item in one["items"]:
        item["created_at"] = "<recorded at>"
    golden("runs_list", one)
