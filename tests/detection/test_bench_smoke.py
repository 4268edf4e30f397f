"""The detector benchmark still runs and reports what docs/detectors.md quotes (no timing asserted)."""

from __future__ import annotations

from script_modules import ROOT, load_script

BENCH = ROOT / "benchmarks" / "bench_detectors.py"


def test_the_benchmark_runs_on_a_small_session() -> None:
    bench = load_script(BENCH)
    r = bench.run(steps=300, repeats=1)
    assert r["messages"] == 301 and r["parts"] > 600
    assert {"batch_vs_parse", "incremental_vs_batch", "full_vs_quarter_rate"} <= set(r["ratios"])
    assert r["findings"] == []  # the generated working session reads healthy
