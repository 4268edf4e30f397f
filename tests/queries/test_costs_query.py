"""Cost rollups over sessions and Claude runs together, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy.engine import Engine
from storeseed import T0, add, cycle, seed_fleet, session

from telemetry.queries.cost_views import cost_views
from telemetry.queries.costs import (
    cost_breakdown,
    daily_series,
    merge_sources,
    most_expensive_sessions,
    most_expensive_trees,
)
from telemetry.queries.fleet_models import CostRow, TopSpend
from telemetry.store.db import session_scope


def _breakdown(engine: Engine, by: list[str], **kw: Any) -> dict[str, Any]:
    """The breakdown as its JSON: only the keys grouped on in each row."""
    with session_scope(engine, write=False) as db:
        got = cost_breakdown(db, by, **kw)
    rows = [r.model_dump(exclude_unset=True) for r in got.rows]
    return {"by": got.by, "rows": rows, "totals": got.totals.model_dump()}


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


def test_driver_comes_from_the_linked_cycle_never_the_label(engine: Engine) -> None:
    seed_fleet(engine)
    # A label that is no cycle id stays a label; a session its dispatcher posted with a cycle
    # (cycle.session_id) and archived without cycle_id still belongs to that cycle's driver.
    add(
        engine,
        session("ses_fleet", label="fleet-a", cost_usd=0.07),
        session("ses_posted", label="cycle-implementer-1003", cost_usd=0.09),
        cycle("cyc-posted", "poster", session_id="ses_posted"),
    )
    rows = _breakdown(engine, ["driver"])["rows"]
    by = {(r["source"], r["driver"]): r["count"] for r in rows}
    # the review tree (4 sessions) through cyc-1, named by the root or posted with its root id;
    # ses_other through cyc-2, which was posted with its session id.
    assert by == {
        ("opencode", "review"): 4,
        ("opencode", "implementer"): 1,
        ("opencode", "poster"): 1,
        ("opencode", None): 2,
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


def _ident(item: TopSpend) -> str:
    return str(item.session_id if item.source == "opencode" else item.run_key)


def test_most_expensive_sessions_and_trees_include_claude_runs(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        top = most_expensive_sessions(db, limit=3)
        trees = most_expensive_trees(db, limit=2)
        recent = most_expensive_trees(db, since=T0 + timedelta(hours=1))
    assert [_ident(s) for s in top] == ["ses_root", "run-turns", "ses_other"]
    assert [s.source for s in top] == ["opencode", "claude", "opencode"]
    assert top[1].title == "triage #13"  # a run is named by its task
    assert [_ident(t) for t in trees] == ["ses_root", "run-turns"]
    assert trees[0].subtree_cost_usd == pytest.approx(0.76)
    assert trees[0].subtree_session_count == 4
    assert [_ident(t) for t in recent] == ["run-turns", "ses_other", "run-ok", "run-exec"]


def test_one_row_per_day_with_its_sources(engine: Engine) -> None:
    """OpenCode sessions and Claude runs on the same day are one day."""
    seed_fleet(engine)
    rows = _breakdown(engine, ["day"])["rows"]
    days = [d.model_dump(exclude_unset=True) for d in merge_sources([CostRow(**r) for r in rows], "day")]
    assert [d["key"] for d in days] == ["2026-11-01", "2026-10-30"]
    nov = days[0]
    assert {s["source"] for s in nov["sources"]} == {"opencode", "claude"}
    assert nov["cost_usd"] == pytest.approx(sum(s["cost_usd"] for s in nov["sources"]))
    assert nov["count"] == 8


def test_daily_series_stacks_spend_by_agent(engine: Engine) -> None:
    seed_fleet(engine)
    with session_scope(engine, write=False) as db:
        got = daily_series(db, "agent").model_dump()
        with pytest.raises(ValueError, match="cannot stack by 'day'"):
            daily_series(db, "day")
    assert got["days"] == ["2026-10-30", "2026-11-01"]
    build = next(s for s in got["series"] if s["key"] == "build")
    assert build["cost_usd"] == [0.0, pytest.approx(0.80)]
    assert got["day_totals"][1] == pytest.approx(sum(s["cost_usd"][1] for s in got["series"]))
    assert got["series"][0]["key"] == "build"  # most expensive stack first


@pytest.mark.parametrize("groups", [["agent", "model", "driver", "day"], ["day", "agent"], []])
@pytest.mark.parametrize("stack", ["agent", "model"])
def test_the_costs_page_from_one_scan_equals_each_grouping_asked_alone(
    engine: Engine, groups: list[str], stack: str
) -> None:
    seed_fleet(engine)
    since, until = T0 - timedelta(days=30), T0 + timedelta(days=30)
    with session_scope(engine, write=False) as db:
        breakdowns, totals, daily = cost_views(db, groups, stack, since, until)
        alone = {g: cost_breakdown(db, [g], since, until) for g in groups}
        assert breakdowns == {g: merge_sources(alone[g].rows, g) for g in groups}
        first = alone[groups[0]] if groups else cost_breakdown(db, [], since, until)
        assert totals == first.totals and totals.count > 0
        assert daily == daily_series(db, stack, since, until)
