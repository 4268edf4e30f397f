"""The detector benchmark still runs and reports what docs/detectors.md quotes (no timing asserted)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_detectors.py"


def test_the_benchmark_runs_on_a_small_session() -> None:
    spec = importlib.util.spec_from_file_location("bench_detectors", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.run(steps=300, repeats=1)
    assert r["messages"] == 301 and r["parts"] > 600
    assert {"batch_vs_parse", "incremental_vs_batch", "full_vs_quarter_rate"} <= set(r["ratios"])
    assert r["findings"] == []  # the generated working session reads healthy
