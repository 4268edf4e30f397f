"""Redaction alone: MB/s of `Redactor.redact_json` over archive-like JSON text, per engine.

Two corpora: the archiver benchmark's sessions (prose, commands, tool output: few finds) and the
Claude fixtures' transcripts (real CLI lines). Each is redacted `--rounds` times; the median is
reported. `--json` prints the figures for comparison between two versions of the rules.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).parent))
from bench_archiver import _message

from archiver.redact import Redactor

ROOT = Path(__file__).resolve().parents[1]


def corpora(messages: int) -> dict[str, bytes]:
    sessions = orjson.dumps([_message("ses_bench", n) for n in range(messages)])
    claude = (
        b"["
        + b",".join(
            line
            for p in sorted((ROOT / "tests" / "fixtures" / "claude").rglob("*.jsonl"))
            for line in p.read_bytes().splitlines()
            if line.strip()
        )
        + b"]"
    )
    return {"sessions": sessions, "claude": claude}


def measure(red: Redactor, text: bytes, rounds: int) -> float:
    red.redact_json(text)  # patterns compiled once, outside the timing
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        red.redact_json(text)
        times.append(time.perf_counter() - t)
    return len(text) / 1e6 / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out: dict[str, float] = {}
    for name, text in corpora(args.messages).items():
        for engine in ("auto", "re"):
            red = Redactor(b"k" * 32, ["a-configured-secret-value"], engine=engine)
            mb_s = out[f"{name}/{red.engine}"] = measure(red, text, args.rounds)
            if not args.json:
                print(f"{name:9s} {red.engine:9s} {len(text) / 1e6:6.1f} MB  {mb_s:7.1f} MB/s")
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
