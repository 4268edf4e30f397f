"""What a Claude import cannot skip, stage by stage, against the parse loop, in one process.

`bench_claude_import.py` measures the whole import against ccusage and the parse loop (every
line read and parsed with orjson, nothing else). This one asks how close to that loop any import
that keeps octel's promises can come: over the same generated folder, each stage alone, the CPU
of this process (`time.process_time`), the median of `--rounds`:

- parse: the loop itself, in this process (the 1x);
- redact: the one redactor scanning each transcript's bytes once, as they are (every input is
  redacted before it is stored; a single pass over the raw bytes is the least that can mean);
- load: the importer's own reading (`load_tree`: lines parsed once, bookkeeping lines counted
  unparsed, sidechains split);
- score: the detectors over each session's messages (`score_claude`, the findings and verdicts
  every archived session carries), from trees loaded beforehand;
- prepare: the whole of a worker's pure part (`prepare_claude_tree`: build, score, price,
  serialise, redact, validate), from trees loaded beforehand.

The floor of an import is at least parse + redact + score: each is printed as a ratio to the
loop, and so is their sum, next to the target of 2x.

    python benchmarks/bench_claude_floor.py [--sessions 3000] [--rounds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_claude_import import generate

from archiver.claude.archive import prepare_claude_tree
from archiver.claude.document import score_claude
from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.redact import Redactor

TARGET = 2.0


def _cpu(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="octel-claude-floor-") as tmp:
        folder = Path(tmp) / "claude"
        size = generate(folder, args.sessions)
        files = sorted(folder.rglob("*.jsonl"))
        sessions = find_sessions(folder)
        redactor = Redactor(b"k" * 32)

        def parse() -> None:
            for p in files:
                for line in p.read_bytes().splitlines():
                    if line.strip():
                        orjson.loads(line)

        def redact() -> None:
            for p in files:
                redactor.redact_bytes(p.read_bytes())

        def load() -> None:
            for s in sessions:
                load_tree(s)

        trees = [load_tree(s) for s in sessions]

        def score() -> None:
            for t in trees:
                for s in t.sessions:
                    score_claude(s.messages, t.results if s.depth == 0 else [])

        def prepare() -> None:
            for t in trees:
                prepare_claude_tree(t, redactor)

        stages = {
            name: _cpu(fn, args.rounds)
            for name, fn in (
                ("parse", parse),
                ("redact", redact),
                ("load", load),
                ("score", score),
                ("prepare", prepare),
            )
        }
    base = stages["parse"]
    floor = stages["parse"] + stages["redact"] + stages["score"]
    with open("/proc/loadavg") as fh:
        load_avg = fh.read().split()[:3]
    out = {
        "sessions": args.sessions,
        "files": len(files),
        "bytes": size,
        "rounds": args.rounds,
        "load_average": load_avg,
        "cpu_s": {k: round(v, 3) for k, v in stages.items()},
        "x_parse": {k: round(v / base, 2) for k, v in stages.items()},
        "floor_x_parse": round(floor / base, 2),
        "target_x_parse": TARGET,
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.sessions} sessions, {len(files)} files, {size / 1e6:.0f} MB, load {' '.join(load_avg)}")
    for k, v in stages.items():
        print(f"  {k:<8} {v:7.2f} s CPU  {v / base:5.2f}x the parse loop")
    print(f"  parse + redact + score: {floor / base:.2f}x the parse loop (target {TARGET}x)")


if __name__ == "__main__":
    main()
