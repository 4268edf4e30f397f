"""Query library latency at fleet scale, as ratios against a lookup by id in the same run.

Seeds a SQLite store with SESSIONS index rows (trees of one to four sessions, eight agents,
four models, ~300 labels, three verdicts, 90 days) and a Claude run per twenty sessions with
bulk Core inserts, then measures p50 and p95 of `telemetry.queries` calls:

- baseline:      one index row by session id (the cheapest indexed read there is);
- sessions list: each filter alone and combined, text search, roots only, a later page;
- tree:          `session_tree` of a root;
- costs:         `cost_breakdown` by agent and by driver,day over 7 days (grouped in SQL).

Also prints EXPLAIN QUERY PLAN of every filtered list query: none may sort (`TEMP B-TREE`),
except text search, which reads only the matching rows through the FTS5 trigram table and sorts
those.
Target: p95 of a filtered sessions page under 50 ms on SQLite at 100,000 sessions.

    python benchmarks/bench_queries.py [--sessions 100000] [--n 200] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import event, insert
from sqlalchemy.engine import Engine

from detectors.findings import VERDICTS
from telemetry.queries.costs import cost_breakdown
from telemetry.queries.sessions import SessionFilter, get_session, list_sessions, session_tree
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import AgentRun, SessionIndex

AGENTS = ["build", "plan", "general", "explore", "review", "fixer", "docs", "nester"]
MODELS = ["anthropic/claude-sonnet-4-5", "openai/gpt-5", "fake/fake-model", "google/gemini-2.5-pro"]
WORDS = ["fix", "flaky", "test", "parser", "refactor", "login", "cache", "build", "docs", "api"]
NOW = datetime(2026, 11, 29, tzinfo=UTC)


def _rows(n: int, rng: random.Random) -> Iterator[dict[str, Any]]:
    i = 0
    while i < n:
        root = f"ses_{i:07d}"
        at = NOW - timedelta(seconds=rng.randrange(90 * 86400))
        size = rng.choice((1, 1, 2, 4))
        for k in range(size):
            sid = root if k == 0 else f"ses_{i:07d}"
            yield {
                "session_id": sid,
                "root_session_id": root,
                "parent_session_id": None if k == 0 else root,
                "depth": 0 if k == 0 else 1,
                "label": f"label-{rng.randrange(300)}",
                "agent": rng.choice(AGENTS),
                "model": rng.choice(MODELS),
                "title": " ".join(rng.choices(WORDS, k=4)),
                "created_at": at,
                "archived_at": at + timedelta(seconds=k),
                "verdict": rng.choices(VERDICTS, (90, 7, 3))[0],
                "tokens_input": rng.randrange(10_000),
                "tokens_output": rng.randrange(5_000),
                "tokens_cache_read": rng.randrange(50_000),
                "cost_usd": rng.random(),
                "archive_path": f"{sid}.json",
                "content_hash": "x",
            }
            i += 1


def seed(engine: Engine, sessions: int) -> None:
    rng = random.Random(7)
    buf: list[dict[str, Any]] = []
    with engine.begin() as conn:
        for row in _rows(sessions, rng):
            buf.append(row)
            if len(buf) == 20_000:
                conn.execute(insert(SessionIndex), buf)
                buf = []
        if buf:
            conn.execute(insert(SessionIndex), buf)
        runs = [
            {
                "run_key": f"run-{j}",
                "agent": rng.choice(AGENTS),
                "model": "claude-sonnet-4-5",
                "cost_usd": rng.random(),
                "input_tokens": rng.randrange(100),
                "created_at": NOW - timedelta(seconds=rng.randrange(90 * 86400)),
            }
            for j in range(sessions // 20)
        ]
        conn.execute(insert(AgentRun), runs)


def measure(engine: Engine, fn: Callable[[Any], object], n: int) -> dict[str, float]:
    times = []
    with session_scope(engine, write=False) as db:
        fn(db)  # warm the statement cache
        for _ in range(n):
            t0 = time.perf_counter()
            fn(db)
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1]}


def plans(engine: Engine, filters: dict[str, SessionFilter]) -> dict[str, str]:
    out: dict[str, str] = {}
    current: list[str] = []

    def grab(conn: Any, cursor: Any, statement: str, params: Any, context: Any, executemany: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).fetchall()
            current.append(" | ".join(str(r[-1]) for r in rows))

    event.listen(engine, "before_cursor_execute", grab)
    try:
        for name, f in filters.items():
            with session_scope(engine, write=False) as db:
                list_sessions(db, f)
            out[name] = current[-1]
    finally:
        event.remove(engine, "before_cursor_execute", grab)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'bench.db'}")
        upgrade(engine)
        t0 = time.perf_counter()
        seed(engine, args.sessions)
        seeded_s = time.perf_counter() - t0
        week = NOW - timedelta(days=7)
        with session_scope(engine, write=False) as db:
            second = list_sessions(db, SessionFilter(agent="build", limit=50)).next_cursor
        filters = {
            "newest page": SessionFilter(),
            "agent": SessionFilter(agent="build"),
            "verdict stuck": SessionFilter(verdict="stuck"),
            "model + 7 days": SessionFilter(model="openai/gpt-5", since=week),
            "label": SessionFilter(label="label-17"),
            "text search": SessionFilter(q="flaky parser"),
            "text search, common word": SessionFilter(q="fix"),
            "text search, no match": SessionFilter(q="no-such-words"),
            "roots only": SessionFilter(root_only=True),
            "agent + verdict + roots": SessionFilter(agent="plan", verdict="suspect", root_only=True),
            "agent, second page": SessionFilter(agent="build", cursor=second),
        }
        results: dict[str, dict[str, float]] = {
            "baseline (one row by id)": measure(engine, lambda db: get_session(db, "ses_0000400"), args.n)
        }
        for name, f in filters.items():
            results[f"sessions: {name}"] = measure(engine, lambda db, f=f: list_sessions(db, f), args.n)
        results["tree of a root"] = measure(engine, lambda db: session_tree(db, "ses_0000400"), args.n)
        few = max(10, args.n // 10)
        results["costs by agent, 7 days"] = measure(
            engine, lambda db: cost_breakdown(db, ["agent"], week), few
        )
        results["costs by driver,day, 7 days"] = measure(
            engine, lambda db: cost_breakdown(db, ["driver", "day"], week), few
        )
        query_plans = plans(engine, filters)
        engine.dispose()
    base = results["baseline (one row by id)"]["p50_ms"]
    sorted_pages = [
        name
        for name, plan in query_plans.items()
        if "TEMP B-TREE" in plan and not name.startswith("text search")
    ]
    report = {
        "sessions": args.sessions,
        "seed_seconds": round(seeded_s, 1),
        "results": {
            k: {**{m: round(v, 3) for m, v in r.items()}, "p50_ratio": round(r["p50_ms"] / base, 1)}
            for k, r in results.items()
        },
        "plans": query_plans,
        "pages_that_sort": sorted_pages,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.sessions} sessions seeded in {seeded_s:.1f}s; ratios against the p50 of the baseline")
        for k, r in report["results"].items():
            print(f"  {k:34} p50 {r['p50_ms']:8.2f} ms  p95 {r['p95_ms']:8.2f} ms  x{r['p50_ratio']}")
        print("pages that sort:", ", ".join(sorted_pages) or "none")
    return 1 if sorted_pages else 0


if __name__ == "__main__":
    sys.exit(main())
