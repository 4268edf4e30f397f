"""The fleet-day benchmark still runs, archives every tree once and forgets old ones (no timing
asserted: that is the benchmark's own report)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from script_modules import load_script

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_watch.py"


def test_a_short_day_archives_each_tree_once_and_holds_only_the_recent_ones() -> None:
    bench = load_script(BENCH)
    r = asyncio.run(bench.replay(trees=700, per_hour=100, tick=2.0))
    assert r["archives"] == 700 and r["hours"] == 7
    # each tree is two sessions, each held in two tables; after six hours the first hour's
    # trees are forgotten, so fewer than all 700 are held at the end
    assert r["held_sessions_at_end"] <= 4 * 700 * 6.2 / 7
    assert len(r["cpu_us_per_event_by_hour"]) == 7


def test_the_live_benchmark_sees_an_ask_in_the_store_and_in_metrics(monkeypatch: pytest.MonkeyPatch) -> None:
    # run as a person runs it, from any folder: without the suite's own host allowance
    # (tests/conftest.py lets TestClient's `testserver` in; a plain shell does not)
    monkeypatch.delenv("OCTEL_ALLOWED_HOSTS", raising=False)
    bench = load_script(BENCH.parent / "bench_live.py")
    r = asyncio.run(bench.latency(True))
    assert "error" not in r and 0 <= r["to_live_row_s"] <= r["to_metrics_s"]
