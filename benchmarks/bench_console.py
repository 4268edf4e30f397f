"""Console API latency at fleet scale, as ratios against a trivial request in the same run.

Seeds a SQLite store with SESSIONS indexed sessions (trees of one to four, eight agents, four
models, ~300 labels, 90 days) and CYCLES cycles (six drivers, some in flight) with bulk Core
inserts, writes real archive files for a sample of sessions, then measures in-process (the
app through Starlette's TestClient, HTTP stack and JSON included) p50 and p95 of:

- baseline:        GET /api/health (five daemons);
- sessions list:   filtered pages (agent, verdict, model + window, label, text search for
                   common, rare and absent words, roots only, agent + verdict, the second
                   page through the cursor);
- session page:    GET /api/sessions/{id} (record, findings, tree, per-turn from the archive)
                   and the first page of its timeline;
- drivers, costs:  filtered cycle pages, the 24-hour summary, the 7-day cost breakdowns.

Targets at 1,000,000 sessions on both engines, p95: a filtered sessions page under 50 ms, a
session page under 100 ms, the 7-day Costs page (every grouping) under 100 ms. The store is
loaded once (COPY on PostgreSQL) and kept (benchmarks/fleet_store.py); the machine's load
average is printed beside the figures.

    python benchmarks/bench_console.py [--engine sqlite|postgres] [--dsn URL] [--sessions 100000]
                                       [--cycles 1000000] [--n 200] [--store NAME] [--costs-only]
                                       [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bench_scrape
import fleet_store
import orjson

from archiver.metrics import TOKEN_KINDS
from detectors.findings import VERDICTS
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
from telemetry.store.spend import AMOUNTS, group_key, share_of

warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient`")
from fastapi.testclient import TestClient  # noqa: E402

from web.app import create_app  # noqa: E402

AGENTS = ["build", "plan", "general", "explore", "review", "fixer", "docs", "nester"]
MODELS = ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "fake/fake-model", "google/gemini-2.5-pro"]
DRIVERS = ["implement", "review", "triage", "docs", "release", "nightly"]
WORDS = [
    "fix",
    "flaky",
    "test",
    "parser",
    "refactor",
    "login",
    "cache",
    "build",
    "docs",
    "api",
    "migrate",
    "schema",
    "bump",
    "deps",
    "crash",
    "timeout",
    "memory",
    "leak",
    "ui",
    "lint",
]
SAMPLE_ARCHIVES = 300


def _session_rows(n: int, now: datetime, rnd: random.Random) -> Iterator[dict[str, Any]]:
    """Index rows, a tree at a time; each root keeps its tree's sums as migration 0015 fills
    them (`telemetry.store.tree_rollup`), its other rows none."""
    i = 0
    while i < n:
        tree = list(_tree_rows(i, min(rnd.choice([1, 1, 1, 2, 2, 3, 4]), n - i), now, rnd))
        tree[0]["tree_cost_usd"] = sum(r["cost_usd"] for r in tree)
        tree[0]["tree_tokens"] = sum(r[f"tokens_{k}"] for r in tree for k in TOKEN_KINDS)
        tree[0]["tree_session_count"] = len(tree)
        yield from tree
        i += len(tree)


def _tree_rows(i: int, size: int, now: datetime, rnd: random.Random) -> Iterator[dict[str, Any]]:
    root = f"ses_{i:08d}"
    archived = now - timedelta(seconds=rnd.uniform(0, 90 * 86400))
    label = f"{rnd.choice(WORDS)}-{rnd.randrange(300)}"
    for k in range(size):
        sid = root if k == 0 else f"ses_{i + k:08d}"
        verdict = rnd.choices(VERDICTS, [90, 7, 3])[0]
        tin, tout, cread = rnd.randrange(500, 90_000), rnd.randrange(10, 6000), rnd.randrange(0, 200_000)
        cost = round((tin * 3 + tout * 15 + cread * 0.3) / 1e6, 6)
        agent = "build" if k == 0 else rnd.choice(AGENTS)
        yield {
            "session_id": sid,
            "root_session_id": root,
            "parent_session_id": None if k == 0 else root,
            "depth": 0 if k == 0 else 1,
            "label": label,
            "cycle_id": f"cyc_{rnd.randrange(10**6):07d}",
            "driver": None,
            "agent": agent,
            "model": rnd.choice(MODELS),
            "title": " ".join(rnd.choices(WORDS, k=4)) + ("" if k == 0 else f" (@{agent} subagent)"),
            "directory": "/srv/work",
            "opencode_version": "1.18.33",
            "created_at": archived - timedelta(minutes=20),
            "updated_at": archived,
            "archived_at": archived,
            "duration_s": rnd.uniform(5, 1200),
            "turn_count": rnd.randrange(1, 80),
            "message_count": rnd.randrange(2, 160),
            "in_flight": rnd.random() < 0.01,
            "tokens_input": tin,
            "tokens_output": tout,
            "tokens_reasoning": 0,
            "tokens_cache_read": cread,
            "tokens_cache_write": rnd.randrange(0, 9000),
            "cost_usd": cost,
            "subtree_tokens": tin + tout + cread,
            "subtree_cost_usd": cost,
            "subtree_session_count": size if k == 0 else 1,
            "tree_cost_usd": 0.0,
            "tree_tokens": 0,
            "tree_session_count": 0,
            "verdict": verdict,
            "worst_detector": None if verdict == "healthy" else "doom_loop",
            "finding_count": 0 if verdict == "healthy" else 1,
            "walk_error_count": 0,
            "archive_path": f"{sid}.json",
            "schema_version": 2,
            "content_hash": "sha256:0",
        }


def _cycle_rows(n: int, now: datetime, rnd: random.Random) -> Iterator[dict[str, Any]]:
    for i in range(n):
        started = now - timedelta(seconds=rnd.uniform(0, 90 * 86400))
        open_ = i % 5000 == 0
        ok = rnd.random() < 0.8
        yield {
            "cycle_id": f"cyc_{i:07d}",
            "driver": rnd.choice(DRIVERS),
            "host": f"fleet-{i % 7}",
            "pid": 1000 + i % 50,
            "started_at": started,
            "ended_at": None if open_ else started + timedelta(seconds=rnd.uniform(5, 900)),
            "candidates_count": rnd.randrange(0, 20),
            "claims_count": rnd.randrange(0, 3),
            "swept_count": 0,
            "processed_count": None if open_ else 1,
            "escalated_count": 0,
            "terminal_state": None if open_ else ("done" if ok else "failed"),
            "worker_outcome": None if open_ else ("merged" if ok else "stuck"),
            "error_kind": None if ok else "agent_stuck",
            "session_id": f"ses_{rnd.randrange(10**5):08d}",
            "worker_wallclock_seconds": None,
            "start_synthesised": False,
            "raw": None,
            "updated_at": now,
        }


def _archive(sid: str, messages: int = 60) -> bytes:
    msgs, turns = [], []
    for n in range(messages):
        role = "user" if n % 2 == 0 else "assistant"
        info: dict[str, Any] = {
            "id": f"msg_{n:06d}",
            "sessionID": sid,
            "role": role,
            "time": {"created": 1_795_000_000_000 + n * 1000, "completed": 1_795_000_000_500 + n * 1000},
        }
        parts: list[dict[str, Any]] = [{"id": f"prt_{n:06d}a", "type": "text", "text": "Looking. " * 40}]
        if role == "assistant":
            info.update(
                cost=0.0012,
                finish="tool-calls",
                tokens={"input": 1200, "output": 80, "reasoning": 0, "cache": {"read": 300, "write": 0}},
            )
            parts.append(
                {
                    "id": f"prt_{n:06d}b",
                    "type": "tool",
                    "tool": "bash",
                    "state": {
                        "status": "completed",
                        "input": {"command": f"ls dir{n}"},
                        "output": "total 24\n" * 30,
                        "time": {"start": 1, "end": 2},
                    },
                }
            )
            turns.append(
                {
                    "message_id": info["id"],
                    "index": n,
                    "created": info["time"]["created"],
                    "completed": info["time"]["completed"],
                    "duration_ms": 500,
                    "in_flight": False,
                    "tokens": {
                        "input": 1200,
                        "output": 80,
                        "reasoning": 0,
                        "cache_read": 300,
                        "cache_write": 0,
                    },
                    "cost": 0.0012,
                    "tool_calls": 1,
                    "tool_errors": 0,
                    "finish": "tool-calls",
                    "error": None,
                }
            )
        msgs.append({"info": info, "parts": parts})
    doc = {"schema_version": 2, "session_id": sid, "messages": msgs, "per_turn": turns, "findings": []}
    return orjson.dumps(doc)


class _Drivers:
    """Each session's driver as migration 0012 sets it (`telemetry.store.spend.driver_expr`):
    the newest cycle its cycle id names, else its label, else the newest cycle posted with its
    own id, else with its root's."""

    def __init__(self, cycles: Iterator[dict[str, Any]]) -> None:
        self.by_cycle: dict[str, str] = {}
        self.by_session: dict[str, tuple[datetime, int, str]] = {}
        started_min = datetime.min.replace(tzinfo=UTC)
        for n, c in enumerate(cycles):
            self.by_cycle[c["cycle_id"]] = c["driver"]
            newest = (c["started_at"], n, c["driver"])  # by started_at, then id, as the query orders
            if newest > self.by_session.get(c["session_id"], (started_min, -1, "")):
                self.by_session[c["session_id"]] = newest

    def of(self, row: dict[str, Any]) -> str | None:
        for name in (row["cycle_id"], row["label"]):
            if name in self.by_cycle:
                return self.by_cycle[name]
        for sid in (row["session_id"], row["root_session_id"]):
            if sid in self.by_session:
                return self.by_session[sid][2]
        return None


def _loader(sessions: int, cycles: int) -> fleet_store.Loader:
    """The store as a fleet's would be after its migrations: index rows with their drivers and
    tree sums, the daily spend summary from them (`telemetry.store.spend`), the cycles,
    findings and daemons."""

    def load(put: fleet_store.Put, _fill: fleet_store.Fill | None) -> None:
        rnd = random.Random(7)
        now = datetime.now(UTC)
        drivers = _Drivers(_cycle_rows(cycles, now, random.Random(8)))
        first = next(_session_rows(1, now, random.Random(0)))
        scols = list(first)
        stuck: list[str] = []
        summary: dict[str, list[Any]] = {}

        def sessions_() -> Iterator[list[Any]]:
            for r in _session_rows(sessions, now, rnd):
                r["driver"] = drivers.of(r)
                if r["verdict"] != "healthy":
                    stuck.append(r["session_id"])
                group, amounts = share_of(r)
                acc = summary.setdefault(group_key(*group), [*group, *(0 for _ in amounts)])
                for k, v in enumerate(amounts):
                    acc[5 + k] += v
                yield [r[c] for c in scols]

        put("session_index", scols, sessions_())
        put(
            "spend_day",
            ["key", "day", "source", "agent", "model", "driver", *AMOUNTS],
            ([k, *v] for k, v in sorted(summary.items())),
        )
        ccols = list(next(_cycle_rows(1, now, random.Random(0))))
        put("cycle", ccols, ([r[c] for c in ccols] for r in _cycle_rows(cycles, now, random.Random(8))))
        fcols = [
            "session_id",
            "detector",
            "verdict",
            "score",
            "start_index",
            "evidence",
            "source",
            "detected_at",
        ]
        evidence = {"part_ids": ["prt_000003b"]}
        put("finding", fcols, ([s, "doom_loop", "stuck", 1.0, 3, evidence, "archive", now] for s in stuck))
        dcols = [
            "driver",
            "host",
            "pid",
            "last_heartbeat_at",
            "in_flight_cycle_id",
            "source",
            "first_seen_at",
        ]
        put("daemon", dcols, ([d, "fleet-1", 1, now, None, "http", now] for d in DRIVERS[:5]))

    return load


def _write_archives(archives: Path, sessions: int) -> None:
    archives.mkdir(parents=True, exist_ok=True)
    for k in range(0, min(sessions, SAMPLE_ARCHIVES * 3), 3):
        sid = f"ses_{k:08d}"
        if not (archives / f"{sid}.json").exists():
            (archives / f"{sid}.json").write_bytes(_archive(sid))


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


def _text(client: TestClient, url: str) -> Callable[[], Any]:
    def run() -> Any:
        r = client.get(url)
        if r.status_code != 200:
            raise SystemExit(f"{url}: HTTP {r.status_code} {r.text[:200]}")
        return r.text

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
    # "v2": stores loaded with drivers, tree sums and the daily summary (an older store had none)
    name = args.store or f"console-v2-s{args.sessions}-c{args.cycles}"
    t0 = time.perf_counter()
    with fleet_store.fleet_store(args.engine, name, _loader(args.sessions, args.cycles), dsn=args.dsn) as url:
        ready_s = time.perf_counter() - t0
        engine = make_engine(url)
        upgrade(engine)  # a kept store gets the indexes of newer migrations
        bench_scrape._fixed(engine, datetime.now(UTC))  # daemons and counters for /metrics
        engine.dispose()
        data = fleet_store.CACHE / f"{name}-{args.engine}-data"
        _write_archives(data / "archives", args.sessions)
        settings = Settings(
            data_dir=data, database_url=url, _env_file=None, ingest_token="bench-token-0123456789"
        )  # type: ignore[call-arg, arg-type]
        return _measure_all(args, settings, ready_s)


def _measure_all(args: argparse.Namespace, settings: Settings, ready_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "engine": args.engine,
        "sessions": args.sessions,
        "cycles": args.cycles,
        "n": args.n,
        "store_ready_s": round(ready_s, 1),
        "load_average": os.getloadavg(),
    }
    results: dict[str, dict[str, float]] = {}
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as c:
        results["baseline: GET /api/health"] = measure(_get(c, "/api/health"), args.n)
        if args.costs_only:
            results.update(_costs(c, settings, args.n))
            return _summary(out, results)
        page2 = _get(c, "/api/sessions", agent="general")()["next_cursor"]
        lists = {
            "unfiltered": {},
            "agent": {"agent": "general"},
            "verdict": {"verdict": "stuck"},
            "model+7d": {"model": "openai/gpt-5", "since": "7d"},
            "label": {"label": "flaky-42"},
            "text search": {"q": "parser refactor"},  # two words in a row: 1 session in 130
            "text search, one common word": {"q": "parser"},  # 1 in 5
            "text search, rare label": {"q": "flaky-42"},  # 1 in 5,400
            "text search, three common words in a row": {"q": "crash timeout memory"},  # 1 in 4,200
            "text search + agent": {"q": "parser refactor", "agent": "docs"},
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
        results["metrics: GET /metrics"] = measure(_text(c, "/metrics"), max(10, args.n // 4))
        results["costs: 7 days, all groupings"] = measure(
            _get(c, "/api/costs", since="7d"), max(10, args.n // 10)
        )
    return _summary(out, results)


def _costs(c: TestClient, settings: Settings, n: int) -> dict[str, dict[str, float]]:
    """The Costs page, then each of its parts alone, as `/api/costs` asks them."""
    from telemetry.queries.cost_views import cost_views
    from telemetry.queries.costs import GROUP_KEYS, most_expensive_sessions, most_expensive_trees
    from telemetry.store.db import session_scope

    out = {"costs: 7 days, all groupings": measure(_get(c, "/api/costs", since="7d"), n)}
    engine = make_engine(settings.database_url)
    try:

        def part(fn: Callable[..., Any]) -> Callable[[], Any]:
            def run() -> Any:
                until = datetime.now(UTC)
                with session_scope(engine, write=False) as db:
                    return fn(db, until - timedelta(days=7), until)

            return run

        out["costs part: groupings, totals, daily"] = measure(
            part(lambda db, s, u: cost_views(db, list(GROUP_KEYS), "agent", s, u)), n
        )
        out["costs part: top 10 sessions"] = measure(part(most_expensive_sessions), n)
        out["costs part: top 10 trees"] = measure(part(most_expensive_trees), n)
    finally:
        engine.dispose()
    return out


def _summary(out: dict[str, Any], results: dict[str, dict[str, float]]) -> dict[str, Any]:
    base = results["baseline: GET /api/health"]["p50_ms"]
    for r in results.values():
        r["p95_ratio"] = r["p95_ms"] / base
    out["results"] = results
    lists_p95 = [v["p95_ms"] for k, v in results.items() if k.startswith("sessions list:")] or [0.0]
    out["sessions_list_worst_p95_ms"] = max(lists_p95)
    out["session_page_p95_ms"] = results.get("session page: /api/sessions/{id}", {"p95_ms": 0.0})["p95_ms"]
    out["costs_p95_ms"] = results["costs: 7 days, all groupings"]["p95_ms"]
    out["metrics_p95_ms"] = results.get("metrics: GET /metrics", {"p95_ms": 0.0})["p95_ms"]
    out["load_average_after"] = os.getloadavg()
    out["target_met"] = (
        max(lists_p95) < 50.0 and out["session_page_p95_ms"] < 100 and out["costs_p95_ms"] < 100
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--cycles", type=int, default=1_000_000)
    ap.add_argument("--n", type=int, default=200, help="requests per measurement")
    ap.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--dsn", help="a PostgreSQL server (superuser URL) instead of the cached cluster")
    ap.add_argument("--store", help="the kept store's name (default: console-v2-s<sessions>-c<cycles>)")
    ap.add_argument("--costs-only", action="store_true", help="the Costs page and its parts alone")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = run(args)
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"{out['engine']}: sessions={out['sessions']:,} cycles={out['cycles']:,}  n={out['n']}  "
        f"store ready in {out['store_ready_s']} s  load average {out['load_average']}"
    )
    print(f"{'measurement':48} {'p50 ms':>8} {'p95 ms':>8} {'p95/baseline p50':>17}")
    for name, r in out["results"].items():
        print(f"{name:48} {r['p50_ms']:8.2f} {r['p95_ms']:8.2f} {r['p95_ratio']:16.1f}x")
    verdict = "met" if out["target_met"] else "NOT met"
    print(
        f"targets (p95: filtered sessions page < 50 ms, session page < 100 ms, costs < 100 ms): {verdict} "
        f"(worst page {out['sessions_list_worst_p95_ms']:.1f} ms, "
        f"session {out['session_page_p95_ms']:.1f} ms, "
        f"costs {out['costs_p95_ms']:.1f} ms); load average after {out['load_average_after']}"
    )
    sys.exit(0 if out["target_met"] else 1)


if __name__ == "__main__":
    main()
