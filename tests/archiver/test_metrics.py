"""Per-turn metrics, totals and subtree rollups against captured OpenCode runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from archiver.metrics import TOKEN_KINDS, per_turn, rollup, totals

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"


def _fx(name: str) -> Any:
    return orjson.loads((FIXTURES / f"{name}.json").read_bytes())


@pytest.mark.parametrize("name", ["healthy", "subagent_tree", "tool_errors", "retry_cascade"])
def test_own_totals_match_the_session_record(name: str) -> None:
    fx = _fx(name)
    for rec in fx["sessions"]:
        msgs = fx["messages"][rec["id"]]
        tot = totals(msgs, per_turn(msgs))
        assert tot["cost"] == pytest.approx(rec["cost"], rel=1e-9, abs=1e-12)
        assert tot["tokens"]["input"] == rec["tokens"]["input"]
        assert tot["tokens"]["output"] == rec["tokens"]["output"]
        assert tot["tokens"]["cache_read"] == rec["tokens"]["cache"]["read"]
        assert tot["messages"] == len(msgs)


def test_subtree_rollup_adds_children_the_server_leaves_out() -> None:
    fx = _fx("subagent_tree")
    own = {}
    parents = {}
    for rec in fx["sessions"]:
        msgs = fx["messages"][rec["id"]]
        own[rec["id"]] = totals(msgs, per_turn(msgs))
        parents[rec["id"]] = rec.get("parentID")
    up = rollup(own, parents)
    root = fx["root_id"]
    assert up[root]["sessions"] == 3
    assert up[root]["cost"] == pytest.approx(sum(r["cost"] for r in fx["sessions"]))
    assert up[root]["cost"] > own[root]["cost"]
    leaf = next(r["id"] for r in fx["sessions"] if r["title"].startswith("Check the README"))
    assert up[leaf]["cost"] == pytest.approx(own[leaf]["cost"]) and up[leaf]["sessions"] == 1


def test_turn_fields_for_tools_errors_and_in_flight() -> None:
    turns = per_turn(_fx("tool_errors")["messages"][_fx("tool_errors")["root_id"]])
    assert sum(t["tool_calls"] for t in turns) >= 5
    assert sum(t["tool_errors"] for t in turns) >= 2
    assert turns[-1]["finish"] == "stop" and not turns[-1]["in_flight"]
    aborted = per_turn(_fx("aborted")["messages"][_fx("aborted")["root_id"]])
    assert aborted[-1]["error"] == "MessageAbortedError"
    running = [{"info": {"role": "assistant", "time": {"created": 5}}, "parts": []}]
    t = per_turn(running)[0]
    assert t["in_flight"] and t["duration_ms"] is None and t["completed"] is None


def test_step_finish_numbers_are_not_added_again() -> None:
    msg = {
        "info": {
            "role": "assistant",
            "cost": 1.0,
            "time": {"created": 1, "completed": 3},
            "tokens": {"input": 10, "output": 2, "reasoning": 0, "cache": {"read": 0, "write": 0}},
        },
        "parts": [{"type": "step-finish", "cost": 1.0, "tokens": {"input": 10, "output": 2}}],
    }
    tot = totals([msg], per_turn([msg]))
    assert tot["cost"] == 1.0 and tot["tokens"]["input"] == 10 and tot["duration_ms"] == 2


_tok = st.fixed_dictionaries({k: st.integers(0, 1000) for k in TOKEN_KINDS})


@given(st.lists(st.tuples(st.integers(0, 9), st.floats(0, 5), _tok), min_size=1, max_size=12))
def test_rollup_of_root_is_the_sum_of_all_own(nodes: list[tuple[int, float, dict[str, int]]]) -> None:
    own = {
        f"s{i}": {"turns": 1, "tool_calls": 0, "tokens": tok, "cost": cost}
        for i, (_, cost, tok) in enumerate(nodes)
    }
    # each node hangs under an earlier one (or is the root)
    parents = {f"s{i}": (f"s{p % i}" if i else None) for i, (p, _, _) in enumerate(nodes)}
    up = rollup(own, parents)
    assert up["s0"]["sessions"] == len(nodes)
    assert up["s0"]["cost"] == pytest.approx(sum(c for _, c, _ in nodes))
    for k in TOKEN_KINDS:
        assert up["s0"]["tokens"][k] == sum(t[k] for _, _, t in nodes)


def test_rollup_survives_a_parent_cycle() -> None:
    own = {
        s: {"turns": 1, "tool_calls": 0, "tokens": dict.fromkeys(TOKEN_KINDS, 1), "cost": 1.0} for s in "ab"
    }
    up = rollup(own, {"a": "b", "b": "a"})
    assert {up["a"]["sessions"], up["b"]["sessions"]} <= {1, 2}  # finite, nothing counted twice
