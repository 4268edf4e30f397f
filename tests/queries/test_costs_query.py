"""Cost rollups over sessions and Claude runs together, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from storeseed import T0, seed_fleet

from telemetry.queries.costs import cost_breakdown, most_expensive_sessions, most_expensive_trees
from telemetry.store.db import session_scope


def _breakdown(engine: Engine, by: list[str], **kw: Any) -> dict[str, Any]:
    with session_scope(engine, write=False) as db:
        return cost_breakdown(db, by, **kw)


def test_by_agent_covers_sessions_and_runs(engine: Engine) -> None:
    seed_fleet(engine)
    got = _breakdown(engine, ["agent"])
    rows = {(r["source"], r["agent"]): r for r in got["rows"]}
    assert set(rows) == {
        ("opencode", "build"),
        ("opencode", "general"),
        ("opencode", "explore"),
        ("opencode", "plan"),
        ("claude", "triage"),
        ("claude", "fixer"),
    }
    build = rows[("opencode", "build")]
    assert build["count"] == 2
    assert build["cost_usd"] == pytest.approx(0.80)
    assert build["tokens"] == {
        "input": 1300,
        "output": 530,
        "reasoning": 100,
        "cache_read": 3100,
        "cache_write": 200,
    }
    assert build["cache_hit_ratio"] == pytest.approx(3100 / 4400, abs=1e-4)
    triage = rows[("claude", "triage")]
    assert (triage["count"], triage["tokens"]["cache_write"], triage["tokens"]["reasoning"]) == (2, 800, 0)
    assert got["totals"]["count"] == 9
    assert got["totals"]["cost_usd"] == pytest.approx(
        0.50 + 0.20 + 0.05 + 0.01 + 0.30 + 0.001 + 0.12 + 0.40 + 0.05
    )
    costs = [r["cost_usd"] for r in got["rows"]]
    assert costs == sorted(costs, reverse=True)


def test_driver_comes_from_the_cycle_or_the_label(engine: Engine) -> None:
    seed_fleet(engine)
    rows = _breakdown(engine, ["driver"])["rows"]
    by = {(r["source"], r["driver"]): r["count"] for r in rows}
    # ses_root via its cycle, ses_child_a via its label; ses_other via label "implementer".
    assert by == {
        ("opencode", "review"): 2,
        ("opencode", "implementer"): 1,
        ("opencode", None): 3,
        ("claude", None): 3,
    }


def test_window_and_day(engine: Engine) -> None:
    seed_fleet(engine)
    got = _breakdown(engine, ["day", "model"], since=T0 - timedelta(days=1), until=T0 + timedelta(hours=2))
    assert {r["day"] for r in got["rows"]} == {"2026-11-01"}
    assert got["totals"]["count"] == 5  # four tree sessions (created by 12:03) and run-ok at 13:00
    everything = _breakdown(engine, ["day"])
    assert {r["day"] for r in everything["rows"]} == {"2026-10-30", "2026-11-01"}


def test_empty_store_and_bad_key(engine: Engine) -> None:
    got = _breakdown(engine, [])
    assert got["rows"] == [] and got["totals"]["cache_hit_ratio"] is None
    with pytest.raises(ValueError, match="cannot group by 'host'"):
        _breakdown(engine, ["agent", "host"])


def test_most_expensive_sessions_and_trees(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        top = most_expensive_sessions(db, limit=3)
        trees = most_expensive_trees(db, limit=2)
        recent = most_expensive_trees(db, since=T0 + timedelta(hours=1))
    assert [s["session_id"] for s in top] == ["ses_root", "ses_other", "ses_child_a"]
    assert [t["session_id"] for t in trees] == ["ses_root", "ses_other"]
    assert trees[0]["subtree_cost_usd"] == pytest.approx(0.76)
    assert trees[0]["subtree_session_count"] == 4
    assert [t["session_id"] for t in recent] == ["ses_other"]
