"""The CPU every query command costs on an empty store, against `python -c "import sqlalchemy"`
measured in the same run (what the store's commands cannot do without).

Each command line runs as a fresh process REPEATS times after one warm-up; the figure is the
median CPU time (user + system) of the child, which shared cores disturb less than wall time.
The target: `octel sessions list --json` within 1.5x of the SQLAlchemy import. The floor
under it is printed too: the CPU of importing each library the commands are built on (SQLModel,
pydantic, pydantic-settings, typer), alone, against the same baseline.

    python benchmarks/bench_cli_queries.py [--repeats 9] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_RATIO = 1.5
QUERIES = (
    "sessions list",
    "sessions show ses_none",
    "sessions tree ses_none",
    "sessions list --live",
    "why ses_none",
    "cycles list",
    "cycles summary",
    "costs",
    "runs list",
    "lost",
    "actions list",
    "detect ses_none",
)
# what the store's commands stand on, each imported alone: the floor no lazy import goes under
FLOOR = (
    "sqlalchemy.orm",
    "pydantic",
    "pydantic_settings",
    "typer",
    "sqlmodel",
    "sqlmodel, typer, pydantic_settings",
)


def _cpu(cmd: list[str], env: dict[str, str], repeats: int) -> float:
    subprocess.run(cmd, env=env, capture_output=True, check=False)  # warm-up
    runs = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(cmd, env=env, capture_output=True, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        runs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "OCTEL_DATA_DIR": str(Path(tmp) / "data")}
        subprocess.run([py, "-m", "cli", "db", "upgrade"], env=env, capture_output=True, check=True)
        base = _cpu([py, "-c", "import sqlalchemy"], env, args.repeats)
        took = {q: _cpu([py, "-m", "cli", *q.split(), "--json"], env, args.repeats) for q in QUERIES}
        floor = {m: _cpu([py, "-c", f"import {m}"], env, args.repeats) for m in FLOOR}
    rows = [
        {"command": f"octel {q} --json", "cpu_s": round(t, 4), "ratio": round(t / base, 2)}
        for q, t in took.items()
    ]
    floor_rows = [{"import": m, "cpu_s": round(t, 4), "ratio": round(t / base, 2)} for m, t in floor.items()]
    if args.json:
        answer = {
            "import_sqlalchemy_cpu_s": round(base, 4),
            "target_ratio": TARGET_RATIO,
            "rows": rows,
            "floor": floor_rows,
        }
        print(json.dumps(answer, indent=2))
        return
    print(f"python -c 'import sqlalchemy': {base * 1000:.0f} ms CPU")
    print(f"{'command':<40} {'CPU':>8} {'x sqlalchemy':>13}")
    for r in rows:
        print(f"{r['command']:<40} {r['cpu_s'] * 1000:>6.0f}ms {r['ratio']:>12.2f}x")
    for f in floor_rows:
        print(f"{'python -c import ' + f['import']:<40} {f['cpu_s'] * 1000:>6.0f}ms {f['ratio']:>12.2f}x")
    print(f"target: octel sessions list --json within {TARGET_RATIO}x")


if __name__ == "__main__":
    main()
