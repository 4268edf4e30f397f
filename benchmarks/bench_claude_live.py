"""How soon a Claude Code transcript line is on the live board.

`octel watch --claude-dir` runs in its own process (so its CPU is its own) on a config folder
of SESSIONS transcripts, BUSY of which keep growing (a line every half second each). One
target transcript is appended a line at a known moment, walking a turn (prompt → busy, tool
call → running_tool, result → busy, answer → idle); the time until its live row in the store
says the new state is measured SAMPLES times. Reported: p50 and p95 in seconds (target p95
within 5 s), and the p95 as a ratio of the watcher's tick measured in the same run (the
interval it sleeps between reads: the floor of what any line can wait).

    python benchmarks/bench_claude_live.py [--sessions 50] [--busy 10] [--samples 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson
from sqlmodel import select

from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.migrate import upgrade

ROOT = Path(__file__).resolve().parents[1]
TICK_S = 1.0  # the Claude live loop's interval with --poll-interval 1


def _line(sid: str, kind: str, n: int) -> bytes:
    ts = "2026-12-02T10:00:00.000Z"
    use = {"input_tokens": 100, "output_tokens": 10}
    if kind == "prompt":
        obj: dict[str, Any] = {
            "type": "user",
            "uuid": f"u{n}",
            "sessionId": sid,
            "timestamp": ts,
            "message": {"role": "user", "content": f"step {n}"},
        }
    elif kind == "call":
        block = {"type": "tool_use", "id": f"tu{n}", "name": "Bash", "input": {"command": f"echo {n}"}}
        obj = {
            "type": "assistant",
            "uuid": f"a{n}",
            "sessionId": sid,
            "timestamp": ts,
            "message": {
                "id": f"m{n}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [block],
                "usage": use,
                "stop_reason": "tool_use",
            },
        }
    elif kind == "result":
        res = [{"type": "tool_result", "tool_use_id": f"tu{n - 1}", "content": "ok"}]
        obj = {
            "type": "user",
            "uuid": f"r{n}",
            "sessionId": sid,
            "timestamp": ts,
            "message": {"role": "user", "content": res},
        }
    else:
        obj = {
            "type": "assistant",
            "uuid": f"d{n}",
            "sessionId": sid,
            "timestamp": ts,
            "message": {
                "id": f"m{n}",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "done"}],
                "usage": use,
                "stop_reason": "end_turn",
            },
        }
    return orjson.dumps(obj) + b"\n"


STEPS = [("prompt", "busy"), ("call", "running_tool"), ("result", "busy"), ("answer", "idle")]


def _state(engine: Any, sid: str) -> str | None:
    with session_scope(engine, write=False) as db:
        row = db.exec(select(LiveSession.state).where(LiveSession.session_id == sid)).first()
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--busy", type=int, default=10)
    ap.add_argument("--samples", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-claude-live-"))
    folder = tmp / "claude" / "projects" / "-work"
    folder.mkdir(parents=True)
    sids = [f"00000000-0000-4000-8000-{i:012d}" for i in range(args.sessions)]
    for sid in sids:
        (folder / f"{sid}.jsonl").write_bytes(_line(sid, "prompt", 0) + _line(sid, "answer", 1))
    target = sids[0]
    url = f"sqlite:///{tmp / 'store.db'}"
    engine = make_engine(url)
    upgrade(engine)
    env = {**os.environ, "OCTEL_DATABASE_URL": url, "OCTEL_DATA_DIR": str(tmp / "data")}
    cmd = [
        sys.executable,
        "-m",
        "cli",
        "watch",
        "--claude-dir",
        str(tmp / "claude"),
        "--claude-cli",
        "off",
        "--poll-interval",
        str(TICK_S),
        "--claude-quiet",
        "3600",
    ]
    watcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def churn() -> None:  # the busy sessions keep writing
        n = 2
        while not stop.wait(0.5):
            for sid in sids[1 : 1 + args.busy]:
                with (folder / f"{sid}.jsonl").open("ab") as fh:
                    fh.write(_line(sid, "prompt", n))
            n += 1

    threading.Thread(target=churn, daemon=True).start()
    lags: list[float] = []
    try:
        deadline = time.monotonic() + 60
        while _state(engine, target) != "idle" and time.monotonic() < deadline:
            time.sleep(0.1)
        n = 10
        for i in range(args.samples):
            kind, want = STEPS[i % len(STEPS)]
            time.sleep(random.uniform(0, TICK_S))  # out of step with the watcher's ticks
            with (folder / f"{target}.jsonl").open("ab") as fh:
                t0 = time.monotonic()
                fh.write(_line(target, kind, n))
            n += 1
            while _state(engine, target) != want:
                if time.monotonic() - t0 > 30:
                    raise SystemExit(f"sample {i}: the row never said {want}")
                time.sleep(0.02)
            lags.append(time.monotonic() - t0)
    finally:
        stop.set()
        watcher.terminate()
        watcher.wait(30)
        engine.dispose()
    lags.sort()
    p95 = lags[min(len(lags) - 1, int(0.95 * len(lags)))]
    out = {
        "sessions": args.sessions,
        "busy": args.busy,
        "samples": len(lags),
        "p50_s": round(statistics.median(lags), 3),
        "p95_s": round(p95, 3),
        "tick_s": TICK_S,
        "p95_over_tick": round(p95 / TICK_S, 2),
        "target_p95_s": 5.0,
    }
    print(json.dumps(out) if args.json else "\n".join(f"{k}: {v}" for k, v in out.items()))


if __name__ == "__main__":
    main()
