"""How fast the detectors score a long session, next to parsing that session's JSON.

One run measures, on a generated session of STEPS assistant steps (reads, edits, tests, text):
- parse:       json.loads of the session as OpenCode serves it (the baseline);
- convert:     archiver.convert (OpenCode JSON -> normalised messages), fast path;
- end to end:  raw JSON bytes -> findings, the old path (json.loads, the general converter,
               score) against the new one (`archiver.convert_read.read_session`: orjson and
               the converter's fast path, then score), both in this run;
- batch:       detectors.score over the whole stream;
- incremental: a Probe fed message by message, asking for findings after every message.
Each is the best of REPEATS, in CPU time of this process (one core; other work on a shared
machine slows the wall clock, not this). Targets: batch >= 100,000 parts per second on one core,
incremental within 2x of batch, and the new end-to-end path at least 2x the old one.

    python benchmarks/bench_detectors.py [--steps 20000] [--repeats 5] [--json] [--check]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "corpus"))

import gen_corpus

from archiver.convert import from_fixture
from archiver.convert_read import read_session
from detectors import Probe, score

PARTS_PER_SECOND_TARGET = 100_000
INCREMENTAL_RATIO_TARGET = 2.0
END_TO_END_SPEEDUP_TARGET = 2.0


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t)
    return best, out


def run(steps: int, repeats: int) -> dict[str, Any]:
    raw = json.dumps(gen_corpus.large_session(steps)).encode()
    t_parse, doc = _best(lambda: json.loads(raw), repeats)
    t_convert, conv = _best(lambda: from_fixture(doc), repeats)

    def old_path() -> int:
        c = from_fixture(json.loads(raw), fast=False)
        return len(score(c.messages, status=c.status, permissions=c.permissions))

    def new_path() -> int:
        c = read_session(raw.decode())
        return len(score(c.messages, status=c.status, permissions=c.permissions))

    t_old, n_old = _best(old_path, repeats)
    t_new, n_new = _best(new_path, repeats)
    assert n_old == n_new, "the two paths must find the same"
    messages = conv.messages
    parts = sum(len(m.parts) for m in messages)

    def incremental() -> int:
        probe = Probe()
        n = 0
        for m in messages:
            probe.feed(m)
            n += len(probe.findings())
        return n

    t_batch, found = _best(lambda: score(messages), repeats)
    t_incr, _ = _best(incremental, repeats)
    # Linear work: a quarter of the session should score at the same rate.
    quarter = messages[: len(messages) // 4]
    t_quarter, _ = _best(lambda: score(quarter), repeats)
    quarter_pps = sum(len(m.parts) for m in quarter) / t_quarter
    return {
        "steps": steps,
        "messages": len(messages),
        "parts": parts,
        "json_bytes": len(raw),
        "seconds": {
            "parse": t_parse,
            "convert": t_convert,
            "batch": t_batch,
            "incremental": t_incr,
            "end_to_end_old": t_old,
            "end_to_end_new": t_new,
        },
        "parts_per_second": {
            "batch": parts / t_batch,
            "incremental": parts / t_incr,
            "convert": parts / t_convert,
        },
        "ratios": {
            "batch_vs_parse": t_batch / t_parse,
            "incremental_vs_parse": t_incr / t_parse,
            "convert_vs_parse": t_convert / t_parse,
            "incremental_vs_batch": t_incr / t_batch,
            "full_vs_quarter_rate": (parts / t_batch) / quarter_pps,
            "end_to_end_speedup": t_old / t_new,
        },
        "findings": [f.to_dict()["detector"] for f in found],
        "targets": {
            "batch_parts_per_second": parts / t_batch >= PARTS_PER_SECOND_TARGET,
            "incremental_within_2x": t_incr / t_batch <= INCREMENTAL_RATIO_TARGET,
            "end_to_end_2x_faster": t_old / t_new >= END_TO_END_SPEEDUP_TARGET,
        },
    }


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--steps", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    r = run(args.steps, args.repeats)
    if args.json:
        print(json.dumps(r, indent=2))
    else:
        s, pps, ratio = r["seconds"], r["parts_per_second"], r["ratios"]
        print(
            f"session: {r['steps']} steps, {r['messages']} messages, {r['parts']} parts, "
            f"{r['json_bytes'] / 1e6:.1f} MB of JSON"
        )
        print(f"parse (json.loads)  {s['parse'] * 1e3:8.1f} ms")
        print(
            f"convert             {s['convert'] * 1e3:8.1f} ms  {pps['convert']:>10,.0f} parts/s  "
            f"{ratio['convert_vs_parse']:.2f}x parse"
        )
        print(
            f"batch score         {s['batch'] * 1e3:8.1f} ms  {pps['batch']:>10,.0f} parts/s  "
            f"{ratio['batch_vs_parse']:.2f}x parse"
        )
        print(
            f"incremental probe   {s['incremental'] * 1e3:8.1f} ms  {pps['incremental']:>10,.0f} parts/s  "
            f"{ratio['incremental_vs_parse']:.2f}x parse, "
            f"{ratio['incremental_vs_batch']:.2f}x batch"
        )
        old, new = s["end_to_end_old"] * 1e3, s["end_to_end_new"] * 1e3
        print(
            f"raw JSON -> findings: old {old:.1f} ms, new {new:.1f} ms "
            f"({ratio['end_to_end_speedup']:.2f}x faster)"
        )
        print(
            f"rate on the whole session vs its first quarter: {ratio['full_vs_quarter_rate']:.2f} "
            "(1.0 = linear)"
        )
        for name, ok in r["targets"].items():
            print(f"target {name}: {'met' if ok else 'MISSED'}")
    return 1 if args.check and not all(r["targets"].values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
