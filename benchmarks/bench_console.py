"""Console API latency at fleet scale, as ratios against a trivial request in the same run.

Seeds a SQLite store with SESSIONS indexed sessions (trees of one to four, eight agents, four
models, ~300 labels, 90 days) and CYCLES cycles (six drivers, some in flight) with bulk Core
inserts, writes real archive files for a sample of sessions, then measures in-process (the
app through Starlette's TestClient, HTTP stack and JSON included) p50 and p95 of:

- baseline:        GET /api/health (five daemons);
- sessions list:   filtered pages (agent, verdict, model + window, label, text search,
                   roots only, agent + verdict, the second page through the cursor);
- session page:    GET /api/sessions/{id} (record, findings, tree, per-turn from the archive)
                   and the first page of its timeline;
- drivers, costs:  filtered cycle pages, the 24-hour summary, the 7-day cost breakdowns.

Target: p95 of a filtered sessions page under 50 ms on SQLite at 100,000 sessions.

    python benchmarks/bench_console.py [--sessions 100000] [--cycles 1000000] [--n 200]
                                       [--db PATH (reuse a seeded store)] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import func, insert, select
from sqlalchemy.engine import Engine

from detectors.findings import VERDICTS
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
from telemetry.store.models import Cycle, Daemon, Finding, SessionIndex

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

from web.app import create_app  # noqa: E402

AGENTS = ["build", "plan", "general", "explore", "review", "fixer", "docs", "nester"]
MODELS = ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "fake/fake-model", "google/gemini-2.5-pro"]
DRIVERS = ["implement", "review", "triage", "docs", "release", "nightly"]
WORDS = ["fix", "flaky", "test", "parser", "refactor", "login", "cache", "build", "docs", "api",
         "migrate", "schema", "bump", "deps", "crash", "timeout", "memory", "leak", "ui", "lint"]  # fmt: skip
SAMPLE_ARCHIVES = 300
CHUNK = 20_000


def _chunks(rows: Iterator[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    buf: list[dict[str, Any]] = []
    for r in rows:
        buf.append(r)
        if len(buf) == CHUNK:
            yield buf
            buf = []
    if buf:
        yield buf


def _session_rows(n: int, now: datetime, rnd: random.Random) -> Iterator[dict[str, Any]]:
    i = 0
    while i < n:
        root = f"ses_{i:08d}"
        size = min(rnd.choice([1, 1, 1, 2, 2, 3, 4]), n - i)
        archived = now - timedelta(seconds=rnd.uniform(0, 90 * 86400))
        label = f"{rnd.choice(WORDS)}-{rnd.randrange(300)}"
        for k in range(size):
            sid = root if k == 0 else f"ses_{i + k:08d}"
            verdict = rnd.choices(VERDICTS, [90, 7, 3])[0]
            tin, tout, cread = rnd.randrange(500, 90_000), rnd.randrange(10, 6000), rnd.randrange(0, 200_000)
            cost = round((tin * 3 + tout * 15 + cread * 0.3) / 1e6, 6)
            agent = "build" if k == 0 else rnd.choice(AGENTS)
            yield {
                "session_id": sid, "root_session_id": root, "parent_session_id": None if k == 0 else root,
                "depth": 0 if k == 0 else 1, "label": label, "cycle_id": f"cyc_{rnd.randrange(10**6):07d}",
                "agent": agent, "model": rnd.choice(MODELS),
                "title": " ".join(rnd.choices(WORDS, k=4)) + ("" if k == 0 else f" (@{agent} subagent)"),
                "directory": "/srv/work", "opencode_version": "1.18.33",
                "created_at": archived - timedelta(minutes=20), "updated_at": archived,
                "archived_at": archived, "duration_s": rnd.uniform(5, 1200),
                "turn_count": rnd.randrange(1, 80), "message_count": rnd.randrange(2, 160),
                "in_flight": rnd.random() < 0.01, "tokens_input": tin, "tokens_output": tout,
                "tokens_reasoning": 0, "tokens_cache_read": cread,
                "tokens_cache_write": rnd.randrange(0, 9000),
                "cost_usd": cost, "subtree_tokens": tin + tout + cread, "subtree_cost_usd": cost,
                "subtree_session_count": size if k == 0 else 1, "verdict": verdict,
                "worst_detector": None if verdict == "healthy" else "doom_loop",
                "finding_count": 0 if verdict == "healthy" else 1, "walk_error_count": 0,
                "archive_path": f"{sid}.json", "schema_version": 2, "content_hash": "sha256:0",
            }  # fmt: skip
        i += size


def _cycle_rows(n: int, now: datetime, rnd: random.Random) -> Iterator[dict[str, Any]]:
    for i in range(n):
        started = now - timedelta(seconds=rnd.uniform(0, 90 * 86400))
        open_ = i % 5000 == 0
        ok = rnd.random() < 0.8
        yield {
            "cycle_id": f"cyc_{i:07d}", "driver": rnd.choice(DRIVERS), "host": f"fleet-{i % 7}",
            "pid": 1000 + i % 50, "started_at": started,
            "ended_at": None if open_ else started + timedelta(seconds=rnd.uniform(5, 900)),
            "candidates_count": rnd.randrange(0, 20), "claims_count": rnd.randrange(0, 3),
            "swept_count": 0, "processed_count": None if open_ else 1, "escalated_count": 0,
            "terminal_state": None if open_ else ("done" if ok else "failed"),
            "worker_outcome": None if open_ else ("merged" if ok else "stuck"),
            "error_kind": None if ok else "agent_stuck", "session_id": f"ses_{rnd.randrange(10**5):08d}",
            "worker_wallclock_seconds": None, "start_synthesised": False, "raw": None, "updated_at": now,
        }  # fmt: skip


def _archive(sid: str, messages: int = 60) -> bytes:
    msgs, turns = [], []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        info: dict[str, Any] = {"id": f"msg_{n:06d}", "sessionID": sid, "role": role,
                                "time": {"created": 1_795_000_000_000 + n * 1000,
                                         "completed": 1_795_000_000_500 + n * 1000}}  # fmt: skip
        parts: list[dict[str, Any]] = [{"id": f"prt_{n:06d}a", "type": "text", "text": "Looking. " * 40}]
        if role == "assistant":
            info.update(cost=0.0012, finish="tool-calls", tokens={"input": 1200, "output": 80, "reasoning": 0,
                        "cache": {"read": 300, "write": 0}})  # fmt: skip
            parts.append({"id": f"prt_{n:06d}b", "type": "tool", "tool": "bash",
                          "state": {"status": "completed", "input": {"command": f"ls dir{n}"},
                                    "output": "total 24\n" * 30,
                                    "time": {"start": 1, "end": 2}}})  # fmt: skip
            turns.append({"message_id": info["id"], "index": n, "created": info["time"]["created"],
                          "completed": info["time"]["completed"], "duration_ms": 500, "in_flight": False,
                          "tokens": {"input": 1200, "output": 80, "reasoning": 0, "cache_read": 300,
                                     "cache_write": 0}, "cost": 0.0012, "tool_calls": 1, "tool_errors": 0,
                          "finish": "tool-calls", "error": None})  # fmt: skip
        msgs.append({"info": info, "parts": parts})
    doc = {"schema_version": 2, "session_id": sid, "messages": msgs, "per_turn": turns, "findings": []}
    return orjson.dumps(doc)


def seed(engine: Engine, archives: Path, sessions: int, cycles: int) -> dict[str, float]:
    rnd = random.Random(7)
    now = datetime.now(UTC)
    timings = {}
    t0 = time.perf_counter()
    with engine.begin() as conn:
        for chunk in _chunks(_session_rows(sessions, now, rnd)):
            conn.execute(insert(SessionIndex.__table__), chunk)  # type: ignore[attr-defined]
        timings["seed_sessions_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        for chunk in _chunks(_cycle_rows(cycles, now, rnd)):
            conn.execute(insert(Cycle.__table__), chunk)  # type: ignore[attr-defined]
        timings["seed_cycles_s"] = time.perf_counter() - t1
        stuck = conn.execute(
            select(SessionIndex.session_id).where(SessionIndex.verdict != "healthy")  # type: ignore[arg-type]
        ).scalars()
        conn.execute(
            insert(Finding.__table__),  # type: ignore[attr-defined]
            [{"session_id": s, "detector": "doom_loop", "verdict": "stuck", "score": 1.0, "start_index": 3,
              "evidence": {"part_ids": ["prt_000003b"]}, "source": "archive", "detected_at": now}
             for s in stuck],
        )  # fmt: skip
        conn.execute(
            insert(Daemon.__table__),  # type: ignore[attr-defined]
            [{"driver": d, "host": "fleet-1", "pid": 1, "last_heartbeat_at": now, "in_flight_cycle_id": None,
              "source": "http", "first_seen_at": now} for d in DRIVERS[:5]],
        )  # fmt: skip
    archives.mkdir(parents=True, exist_ok=True)
    for k in range(0, min(sessions, SAMPLE_ARCHIVES * 3), 3):
        sid = f"ses_{k:08d}"
        (archives / f"{sid}.json").write_bytes(_archive(sid))
    timings["seed_total_s"] = time.perf_counter() - t0
    return timings


def measure(fn: Callable[[], Any], n: int) -> dict[str, float]:
    for _ in range(min(10, n)):
        fn()  # warm caches and the connection pool
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    samples.sort()
    return {"p50_ms": statistics.median(samples), "p95_ms": samples[int(0.95 * (len(samples) - 1))]}


def _get(client: TestClient, url: str, **params: Any) -> Callable[[], Any]:
    def run() -> Any:
        r = client.get(url, params=params)
        if r.status_code != 200:
            raise SystemExit(f"{url} {params}: HTTP {r.status_code} {r.text[:200]}")
        return r.json()

    return run


def _rotating(client: TestClient, urls: list[str]) -> Callable[[], Any]:
    it = iter(range(10**9))

    def run() -> Any:
        url = urls[next(it) % len(urls)]
        r = client.get(url)
        if r.status_code != 200:
            raise SystemExit(f"{url}: HTTP {r.status_code} {r.text[:200]}")
        return r.json()

    return run


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(args.db).parent if args.db else Path(tempfile.mkdtemp(prefix="octel-bench-"))
    settings = Settings(data_dir=work, _env_file=None, ingest_token="bench-token-0123456789")  # type: ignore[call-arg, arg-type]
    engine = make_engine(settings.db_url)
    upgrade(engine)
    with engine.connect() as conn:
        have = conn.execute(select(func.count()).select_from(SessionIndex)).scalar_one()
    out: dict[str, Any] = {
        "sessions": args.sessions,
        "cycles": args.cycles,
        "n": args.n,
        "store": settings.db_url,
    }
    if have == 0:
        out["seed"] = seed(engine, settings.archives, args.sessions, args.cycles)
    engine.dispose()
    results: dict[str, dict[str, float]] = {}
    with TestClient(create_app(settings)) as c:
        results["baseline: GET /api/health"] = measure(_get(c, "/api/health"), args.n)
        page2 = _get(c, "/api/sessions", agent="general")()["next_cursor"]
        lists = {
            "unfiltered": {},
            "agent": {"agent": "general"},
            "verdict": {"verdict": "stuck"},
            "model+7d": {"model": "openai/gpt-5", "since": "7d"},
            "label": {"label": "flaky-42"},
            "text search": {"q": "parser refactor"},
            "text search, no match": {"q": "no-such-words"},
            "roots only": {"root_only": "true"},
            "agent+verdict": {"agent": "docs", "verdict": "suspect"},
            "agent, page 2": {"agent": "general", "cursor": page2},
        }
        for name, params in lists.items():
            results[f"sessions list: {name}"] = measure(_get(c, "/api/sessions", **params), args.n)
        ids = [f"ses_{k:08d}" for k in range(0, min(args.sessions, SAMPLE_ARCHIVES * 3), 3)]
        results["session page: /api/sessions/{id}"] = measure(
            _rotating(c, [f"/api/sessions/{s}" for s in ids]), args.n
        )
        results["session page: timeline first page"] = measure(
            _rotating(c, [f"/api/sessions/{s}/messages" for s in ids]), args.n
        )
        results["drivers: cycles, driver + in flight"] = measure(
            _get(c, "/api/cycles", driver="review", in_flight="false"), args.n
        )
        results["drivers: cycles summary 24h"] = measure(_get(c, "/api/cycles/summary", hours=24), args.n)
        results["costs: 7 days, all groupings"] = measure(
            _get(c, "/api/costs", since="7d"), max(10, args.n // 10)
        )
    base = results["baseline: GET /api/health"]["p50_ms"]
    for r in results.values():
        r["p95_ratio"] = r["p95_ms"] / base
    out["results"] = results
    lists_p95 = [v["p95_ms"] for k, v in results.items() if k.startswith("sessions list:")]
    out["sessions_list_worst_p95_ms"] = max(lists_p95)
    out["target_met"] = max(lists_p95) < 50.0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=1_000_000)
    ap.add_argument("--n", type=int, default=200, help="requests per measurement")
    ap.add_argument("--db", help="a folder's octel.db to reuse (seeded on first use)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = run(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"store: {out['store']}  sessions={out['sessions']:,} cycles={out['cycles']:,}  n={out['n']}")
    if "seed" in out:
        print("seeded in " + ", ".join(f"{k} {v:.1f}" for k, v in out["seed"].items()))
    print(f"{'measurement':48} {'p50 ms':>8} {'p95 ms':>8} {'p95/baseline p50':>17}")
    for name, r in out["results"].items():
        print(f"{name:48} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['p95_ratio']:16.1f}x")
    verdict = "met" if out["target_met"] else "NOT met"
    print(f"target p95 < 50 ms for a filtered sessions page: {verdict} "
          f"(worst {out['sessions_list_worst_p95_ms']:.1f} ms)")  # fmt: skip
    sys.exit(0 if out["target_met"] else 1)


if __name__ == "__main__":
    main()
