"""`octel import claude` side by side with ccusage on the same few thousand transcripts.

Generates a Claude Code config folder from the captured runs in `tests/fixtures/claude/` (each
copy gets its own session and message ids, one of three priced models and a day in a 30-day
window; subagent files come along), then runs, each as a fresh process:

- `ccusage daily --json --offline --timezone UTC --breakdown` (npm `ccusage`, what Claude Code
  users run today) over the folder: the baseline;
- the parse loop: a plain Python process that reads every line of every transcript and parses it
  with orjson (`PARSE_LOOP`), the floor any import of these files stands on;
- `octel import claude DIR --json` into an empty data folder (SQLite): archive, redact, score,
  cost and index every session;
- the same import again over the unchanged folder;
- the same import after a tenth of the sessions grew by one answer (read from where they stopped),
  with ccusage and the parse loop run again over the grown folder (both read it all again).

Reported: the three times (and the CPU time of each, worker processes included, which a shared
machine's load inflates far less than wall time, though not at all only on an idle machine: compare
runs made at a similar load), octel's import against ccusage (target: at most 1x), its CPU against
the parse loop's (target: at most 2x), the re-import against the first import (target: at least 10x
faster), the grown folder's import against ccusage's and the parse loop's full re-read, the load
average before and after, and the
totals by day and model of both tools side by side (tokens must be equal; costs are compared and
any difference explained).

    python benchmarks/bench_claude_import.py [--sessions 3000] [--ccusage PATH] [--json]

ccusage is found at `--ccusage`, else `$OCTEL_CCUSAGE_NPM_DIR/node_modules/.bin/ccusage`
(default `~/.cache/octel-test/ccusage`); install it there with
`npm install --no-audit --no-fund ccusage@18.0.11` (later versions need Node 22 or a native
binary that the npm registry here does not carry).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "claude"
MODELS = ("claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001")
KEYS = ("input", "output", "cache_read", "cache_write")
# every line of every transcript read and parsed once, nothing else: the floor of an import
PARSE_LOOP = """
import os, sys, orjson
n = 0
for root, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith(".jsonl"):
            with open(os.path.join(root, name), "rb") as fh:
                for line in fh:
                    if line.strip():
                        orjson.loads(line)
                        n += 1
print(n)
"""


def _templates() -> list[list[tuple[str, bytes]]]:
    """Each captured session as (path relative to its project folder, bytes) pairs."""
    out = []
    for run in sorted(FIXTURES.iterdir()):
        for project in (run / "json" / "projects").glob("*"):
            for main in project.glob("*.jsonl"):
                folder = main.with_suffix("")
                mine = [p for p in sorted(project.rglob("*")) if p == main or p.is_relative_to(folder)]
                out.append([(p.relative_to(project).as_posix(), p.read_bytes()) for p in mine if p.is_file()])
    return out


def generate(folder: Path, sessions: int, seed: int = 7) -> int:
    """`sessions` transcripts (with their subagents) under `folder/projects`; returns bytes written."""
    rng = random.Random(seed)
    templates = _templates()
    total = 0
    for k in range(sessions):
        files = templates[k % len(templates)]
        old_sid = next(Path(rel).stem for rel, _ in files if "/" not in rel)
        new_sid = f"{k:08x}-0000-4000-8000-{rng.getrandbits(48):012x}"
        day = f"2026-10-{1 + rng.randrange(30):02d}T"
        model = MODELS[rng.randrange(len(MODELS))]
        project = folder / "projects" / f"-bench-project-{k % 40}"
        for rel, data in files:
            text = data.replace(old_sid.encode(), new_sid.encode())
            for a, b in (
                (b"msg_fake", f"msg_{k:06d}_".encode()),
                (b"req_fake", f"req_{k:06d}_".encode()),
                (b"toolu_fake", f"toolu_{k:06d}_".encode()),
                (b"claude-opus-5-5", model.encode()),
                (b"2026-11-30T", day.encode()),
            ):
                text = text.replace(a, b)
            if rel.endswith(".jsonl"):  # the CLI's own running cost was priced for another model
                text = b"".join(x for x in text.splitlines(keepends=True) if b'"type":"cost-state"' not in x)
            path = project / rel.replace(old_sid, new_sid)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text)
            total += len(text)
    return total


CPU: list[float] = []  # CPU seconds (user + system, worker processes included) of each _timed run


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=3600)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return took, done.stdout


def _ccusage_totals(out: str) -> dict[tuple[str, str], dict[str, float]]:
    got: dict[tuple[str, str], dict[str, float]] = {}
    for day in json.loads(out)["daily"]:
        for m in day.get("modelBreakdowns") or []:
            got[(day["date"], m["modelName"])] = {
                "input": m["inputTokens"],
                "output": m["outputTokens"],
                "cache_read": m["cacheReadTokens"],
                "cache_write": m["cacheCreationTokens"],
                "cost": m["cost"],
            }
    return got


def _octel_totals(data: Path) -> dict[tuple[str, str], dict[str, float]]:
    """Per day and model from the archives' per-turn entries (a session may mix models)."""
    got: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: dict.fromkeys([*KEYS, "cost"], 0.0))
    db = sqlite3.connect(data / "octel.db")
    paths = [r[0] for r in db.execute("SELECT archive_path FROM session_index")]
    db.close()
    for name in paths:
        doc = json.loads((data / "archives" / name).read_bytes())
        for t in doc["per_turn"]:
            if not t["model"] or t["model"] == "<synthetic>" or t["created"] is None:
                continue
            day = time.strftime("%Y-%m-%d", time.gmtime(t["created"] / 1000))
            row = got[(day, t["model"])]
            for k in KEYS:
                row[k] += t["tokens"][k]
            row["cost"] += t["cost"]
    return dict(got)


def _grow(folder: Path, n: int) -> int:
    """Append one answer to the main transcript of ``n`` sessions, as a running CLI would."""
    mains = sorted(folder.glob("projects/*/*.jsonl"))[:n]
    for main in mains:
        sid = main.stem
        line = {
            "type": "assistant",
            "uuid": f"grow-{sid}",
            "sessionId": sid,
            "timestamp": "2026-10-15T12:00:00.000Z",
            "message": {
                "id": f"msg_grow_{sid}",
                "model": MODELS[0],
                "role": "assistant",
                "content": [{"type": "text", "text": "one more answer"}],
                "usage": {"input_tokens": 10, "output_tokens": 5},
            },
        }
        with main.open("ab") as fh:
            fh.write(json.dumps(line).encode() + b"\n")
    return len(mains)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=3000)
    ap.add_argument("--ccusage", default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    npm = Path(os.environ.get("OCTEL_CCUSAGE_NPM_DIR") or Path.home() / ".cache" / "octel-test" / "ccusage")
    ccusage = args.ccusage or str(npm / "node_modules" / ".bin" / "ccusage")
    if not Path(ccusage).is_file():
        raise SystemExit(f"ccusage not found at {ccusage}; see this script's docstring")
    work = Path(tempfile.mkdtemp(prefix="octel-bench-claude-"))
    try:
        cfg, data = work / "claude", work / "data"
        size = generate(cfg, args.sessions)
        load_before = os.getloadavg()
        env = {**os.environ, "CLAUDE_CONFIG_DIR": str(cfg), "TZ": "UTC", "OCTEL_DATA_DIR": str(data)}
        cc_cmd = [ccusage, "daily", "--json", "--offline", "--timezone", "UTC", "--breakdown"]
        loop_cmd = [sys.executable, "-c", PARSE_LOOP, str(cfg / "projects")]
        t_cc, cc_out = _timed(cc_cmd, env)
        t_loop, _ = _timed(loop_cmd, env)
        octel = [sys.executable, "-m", "cli", "import", "claude", str(cfg), "--json"]
        t_first, first = _timed(octel, env)
        t_again, again = _timed(octel, env)
        cc, oc = _ccusage_totals(cc_out), _octel_totals(data)
        grown_n = _grow(cfg, max(1, args.sessions // 10))
        t_grown, grown = _timed(octel, env)
        t_cc_grown, _ = _timed(cc_cmd, env)
        t_loop_grown, _ = _timed(loop_cmd, env)
        runs = ("ccusage", "loop", "first", "again", "grown", "ccusage_grown", "loop_grown")
        cpu = dict(zip(runs, CPU, strict=True))
        keys = sorted(set(cc) | set(oc))
        token_diff = [
            k for k in keys if any(cc.get(k, {}).get(x, 0) != oc.get(k, {}).get(x, 0) for x in KEYS)
        ]
        cost_cc = sum(v["cost"] for v in cc.values())
        cost_oc = sum(v["cost"] for v in oc.values())
        load_after = os.getloadavg()
        report: dict[str, Any] = {
            "sessions": args.sessions,
            "load_average": {
                "before": [round(x, 2) for x in load_before],
                "after": [round(x, 2) for x in load_after],
            },
            "transcript_bytes": size,
            "ccusage_daily_s": round(t_cc, 2),
            "parse_loop_s": round(t_loop, 2),
            "octel_import_s": round(t_first, 2),
            "octel_reimport_s": round(t_again, 2),
            "import_vs_ccusage": round(t_first / t_cc, 2),
            "reimport_speedup": round(t_first / t_again, 1),
            "grown_sessions": grown_n,
            "octel_grown_reimport_s": round(t_grown, 2),
            "ccusage_grown_s": round(t_cc_grown, 2),
            "parse_loop_grown_s": round(t_loop_grown, 2),
            "grown_vs_ccusage": round(t_grown / t_cc_grown, 2),
            "grown_reimport_resumed": json.loads(grown)["resumed"],
            # on a shared machine wall time includes waiting for a core; CPU time does not
            "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
            "cpu_import_vs_ccusage": round(cpu["first"] / cpu["ccusage"], 2),
            "cpu_import_vs_parse_loop": round(cpu["first"] / cpu["loop"], 2),
            "cpu_reimport_speedup": round(cpu["first"] / cpu["again"], 1),
            "cpu_grown_vs_parse_loop": round(cpu["grown"] / cpu["loop_grown"], 2),
            "cpu_grown_vs_ccusage": round(cpu["grown"] / cpu["ccusage_grown"], 2),
            "import_report": {k: v for k, v in json.loads(first).items() if k != "problems"},
            "reimport_archived": json.loads(again)["archived"],
            "day_model_rows": len(keys),
            "rows_with_token_differences": [f"{d} {m}" for d, m in token_diff],
            "tokens_total": {
                x: [sum(v[x] for v in cc.values()), sum(v[x] for v in oc.values())] for x in KEYS
            },
            "cost_total_usd": {"ccusage": round(cost_cc, 4), "octel": round(cost_oc, 4)},
        }
        if args.json:
            print(json.dumps(report, indent=2))
            return
        print(
            f"{args.sessions} sessions, {size / 1e6:.1f} MB of transcripts; load average "
            f"{load_before[0]:.2f} before, {load_after[0]:.2f} after"
        )
        print(f"ccusage daily --json     {t_cc:7.2f} s   (baseline)")
        print(f"parse loop (orjson)      {t_loop:7.2f} s   CPU {cpu['loop']:.2f} s (the floor)")
        print(f"octel import claude      {t_first:7.2f} s   {t_first / t_cc:.2f}x ccusage (target <= 1x)")
        print(f"octel import, unchanged  {t_again:7.2f} s   {t_first / t_again:.1f}x faster (target >= 10x)")
        print(
            f"octel import, {grown_n} grown {t_grown:7.2f} s   {t_grown / t_cc_grown:.2f}x ccusage's "
            f"{t_cc_grown:.2f} s re-read ({json.loads(grown)['resumed']} read from where they stopped)"
        )
        print(
            f"CPU seconds: ccusage {cpu['ccusage']:.2f}, octel import {cpu['first']:.2f} "
            f"({cpu['first'] / cpu['ccusage']:.2f}x ccusage, {cpu['first'] / cpu['loop']:.2f}x the parse "
            f"loop, target <= 2x), re-import {cpu['again']:.2f} ({cpu['first'] / cpu['again']:.1f}x less)"
        )
        print(
            f"CPU seconds, grown folder: octel {cpu['grown']:.2f}, ccusage {cpu['ccusage_grown']:.2f} "
            f"({cpu['grown'] / cpu['ccusage_grown']:.2f}x), parse loop {cpu['loop_grown']:.2f} "
            f"({cpu['grown'] / cpu['loop_grown']:.2f}x)"
        )
        print(f"day x model rows: {len(keys)}, with token differences: {len(token_diff)}")
        for x in KEYS:
            a, b = report["tokens_total"][x]
            print(f"  {x:<12} ccusage {a:>14,.0f}  octel {b:>14,.0f}")
        print(f"  cost         ccusage {cost_cc:>14.4f}  octel {cost_oc:>14.4f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
