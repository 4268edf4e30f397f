"""How long `octel` takes to start, against `python -c pass` measured in the same run.

Each command line runs as a fresh process REPEATS times (after one warm-up, so the disk cache
is the same for all); the figure is the median wall time. Every figure is also given as a
ratio to the bare interpreter's start, which is what machines differ in least: on an idle
2-core machine `python -c pass` takes ~20 ms and `octel --help` should stay under 0.3 s.

    python benchmarks/bench_startup.py [--repeats 15] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 0.3


def _time(cmd: list[str], env: dict[str, str], repeats: int) -> float:
    subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm-up
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, capture_output=True, check=False)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    py = sys.executable
    octel = [py, "-m", "cli"]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OCTEL_DATA_DIR": str(Path(tmp) / "data")}
        subprocess.run([*octel, "db", "upgrade"], env=env, capture_output=True, check=True)
        cases = {
            "python -c pass": [py, "-c", "pass"],
            "python -c 'import typer'": [py, "-c", "import typer"],
            "octel --help": [*octel, "--help"],
            "octel sessions --help": [*octel, "sessions", "--help"],
            "octel cycles list (empty store)": [*octel, "cycles", "list"],
            "octel archive --help": [*octel, "archive", "--help"],
        }
        took = {name: _time(cmd, env, args.repeats) for name, cmd in cases.items()}
    base = took["python -c pass"]
    rows = [
        {"command": n, "median_s": round(t, 4), "ratio_to_python": round(t / base, 2)}
        for n, t in took.items()
    ]
    if args.json:
        print(json.dumps({"target_s": TARGET_S, "rows": rows}, indent=2))
        return
    print(f"{'command':<34} {'median':>9} {'x python -c pass':>17}")
    for r in rows:
        print(f"{r['command']:<34} {r['median_s'] * 1000:>7.0f}ms {r['ratio_to_python']:>16.1f}x")
    helps = took["octel --help"]
    print(f"octel --help: {helps * 1000:.0f} ms (target < {TARGET_S * 1000:.0f} ms on an idle machine)")


if __name__ == "__main__":
    main()
