"""How the cost of a `/metrics` scrape grows with history, on SQLite or PostgreSQL.

For each size N the store holds N cycles, N/10 archived sessions and N/10 findings (loaded once
and kept: COPY on PostgreSQL, generated inside SQLite by one INSERT … SELECT per table, the same
rows; benchmarks/fleet_store.py), plus what does not grow with history: 20 daemons (HTTP and
heartbeat-file ones, some with a cycle in flight), 20 open cycles and ~650 counter rows. One history cycle in
5,000 was never finished, so open cycles lie scattered over the whole table. A scrape is a GET
/metrics through the real app; the figures are the median and p95 of REPEATS after a warm-up,
and the median CPU time of this process per scrape (app and client), which a busy host's load
moves far less than the wall time.

Scrape time should stay flat: it reads the daemon rows, the open cycles (their partial index),
the named in-flight cycles (unique index) and the `aggregate` table, never the history. The
report gives each size's time as a ratio to the smallest size's, next to the row-count ratio.
Target: under 100 ms at 10,000,000 cycles and 1,000,000 sessions, on both engines.
`--path /api/health` times the health check on the same stores instead (target: its p95 at
5,000,000 cycles within twice its p95 at 10,000).

    python benchmarks/bench_scrape.py [--engine sqlite|postgres] [--dsn URL]
                                      [--sizes 10000,100000,1000000] [--repeats 30] [--json] [--check]
                                      [--path /metrics|/api/health]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import fleet_store
from sqlmodel import func, select

from archiver.metrics import TOKEN_KINDS
from detectors.findings import VERDICTS
from telemetry.settings import Settings
from telemetry.store import aggregates
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Aggregate, Cycle, Daemon
from web.app import create_app

TARGET_MS = 100.0
DRIVERS = ("review", "impl", "triage", "docs", "deps")
# One cycle in 5,000 was begun and never finished (a dispatcher killed mid-cycle), as in the
# console benchmark's store: open cycles scattered over all of history, not only the recent ones.
ABANDONED_EVERY = 5000


_CYCLE_COLS = [
    "cycle_id",
    "driver",
    "host",
    "pid",
    "started_at",
    "ended_at",
    "terminal_state",
    "worker_outcome",
    "start_synthesised",
    "raw",
    "updated_at",
]
_SESSION_COLS = [
    "session_id",
    "root_session_id",
    "depth",
    "agent",
    "model",
    "archived_at",
    "turn_count",
    "message_count",
    "in_flight",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
    "cost_usd",
    "subtree_tokens",
    "subtree_cost_usd",
    "subtree_session_count",
    "verdict",
    "finding_count",
    "walk_error_count",
    "archive_path",
    "schema_version",
    "content_hash",
]
_FINDING_COLS = ["session_id", "detector", "verdict", "score", "start_index", "source", "detected_at"]


def _loader(n: int, now: datetime) -> fleet_store.Loader:
    """N cycles, one a minute back from now; N/10 sessions and as many findings. Made in Python
    (`put`), or where the store can (`fill`, SQLite) by the same rules in SQL: the same rows
    either way (tests/metrics/test_bench_scrape_store.py)."""

    def load(put: fleet_store.Put, fill: fleet_store.Fill | None) -> None:
        m = n // 10
        if fill is not None:
            fill("cycle", _CYCLE_COLS, n, _cycle_sql(n, now))
            fill("session_index", _SESSION_COLS, m, _session_sql(m, now))
            fill("finding", _FINDING_COLS, m, _finding_sql(m, now))
            return

        def cycles() -> Iterator[list[Any]]:
            for i in range(n):
                start = now - timedelta(seconds=60 * (n - i))
                if i % ABANDONED_EVERY == 17:  # begun, never finished: open, spread over history
                    yield [
                        f"c{i}",
                        DRIVERS[i % len(DRIVERS)],
                        "h1",
                        1000 + i % 50,
                        start,
                        None,
                        None,
                        None,
                        False,
                        {},
                        start,
                    ]
                    continue
                yield [
                    f"c{i}",
                    DRIVERS[i % len(DRIVERS)],
                    "h1",
                    1000 + i % 50,
                    start,
                    start + timedelta(seconds=45),
                    "failed" if i % 7 == 0 else "done",
                    "merged",
                    False,
                    {},
                    start,
                ]

        put("cycle", _CYCLE_COLS, cycles())
        at = [now - timedelta(seconds=600 * (m - i)) for i in range(m)]
        put(
            "session_index",
            _SESSION_COLS,
            (
                [
                    f"ses_{i}",
                    f"ses_{i}",
                    0,
                    f"agent{i % 10}",
                    f"model{i % 5}",
                    at[i],
                    5,
                    10,
                    False,
                    100,
                    50,
                    5,
                    900,
                    10,
                    0.1,
                    1065,
                    0.1,
                    1,
                    "stuck" if i % 13 == 0 else "healthy",
                    1,
                    0,
                    f"a/ses_{i}.json",
                    2,
                    "0" * 64,
                ]
                for i in range(m)
            ),
        )
        put(
            "finding",
            _FINDING_COLS,
            (
                [f"ses_{i}", "doom_loop", "stuck" if i % 13 == 0 else "healthy", 0.5, 0, "archive", at[i]]
                for i in range(m)
            ),
        )

    return load


def _cycle_sql(n: int, now: datetime) -> list[str]:
    """`cycles()` above, as SQL expressions of the row number `i`."""
    open_ = f"i % {ABANDONED_EVERY} = 17"
    start = fleet_store.sqlite_time(now, f"-60 * ({n} - i)")
    whens = " ".join(f"WHEN {k} THEN '{d}'" for k, d in enumerate(DRIVERS))
    driver = f"CASE i % {len(DRIVERS)} {whens} END"
    return [
        "'c' || i",
        driver,
        "'h1'",
        "1000 + i % 50",
        start,
        f"CASE WHEN {open_} THEN NULL ELSE {fleet_store.sqlite_time(now, f'-60 * ({n} - i) + 45')} END",
        f"CASE WHEN {open_} THEN NULL WHEN i % 7 = 0 THEN 'failed' ELSE 'done' END",
        f"CASE WHEN {open_} THEN NULL ELSE 'merged' END",
        "0",
        "'{}'",
        start,
    ]


def _session_sql(m: int, now: datetime) -> list[str]:
    at = fleet_store.sqlite_time(now, f"-600 * ({m} - i)")
    return [
        "'ses_' || i",
        "'ses_' || i",
        "0",
        "'agent' || (i % 10)",
        "'model' || (i % 5)",
        at,
        "5",
        "10",
        "0",
        "100",
        "50",
        "5",
        "900",
        "10",
        "0.1",
        "1065",
        "0.1",
        "1",
        "CASE WHEN i % 13 = 0 THEN 'stuck' ELSE 'healthy' END",
        "1",
        "0",
        "'a/ses_' || i || '.json'",
        "2",
        f"'{'0' * 64}'",
    ]


def _finding_sql(m: int, now: datetime) -> list[str]:
    at = fleet_store.sqlite_time(now, f"-600 * ({m} - i)")
    verdict = "CASE WHEN i % 13 = 0 THEN 'stuck' ELSE 'healthy' END"
    return ["'ses_' || i", "'doom_loop'", verdict, "0.5", "0", "'archive'", at]


def _fixed(engine: Any, now: datetime) -> None:
    """What does not grow with history: daemons, open cycles, counters."""
    host = socket.gethostname()
    with session_scope(engine) as db:
        if db.exec(select(func.count()).select_from(Aggregate)).one():
            return  # a kept store has them already
        for i in range(20):
            driver = DRIVERS[i % len(DRIVERS)]
            db.add(
                Cycle(
                    cycle_id=f"open{i}",
                    driver=driver,
                    started_at=now - timedelta(seconds=30 * i),
                    updated_at=now,
                )
            )
            db.add(
                Daemon(
                    driver=driver,
                    host=f"{host}-{i}",
                    pid=2000 + i,
                    last_heartbeat_at=now - timedelta(seconds=40 * i),
                    in_flight_cycle_id=f"open{i}" if i % 3 == 0 else None,
                    source="file" if i % 2 else "http",
                    first_seen_at=now,
                )
            )
        for d in DRIVERS:
            for state in ("done", "failed", "aborted", "timeout"):
                for outcome in ("merged", "rejected", ""):
                    aggregates.bump(
                        db,
                        "cycles_total",
                        {"driver": d, "terminal_state": state, "worker_outcome": outcome},
                        10,
                    )
            for secs in (3, 40, 400, 4000):
                aggregates.observe_cycle_duration(db, d, secs)
        for a in range(10):
            for m in range(5):
                labels = {"agent": f"agent{a}", "model": f"model{m}"}
                aggregates.bump(db, "session_cost_usd_total", labels, 1.5)
                aggregates.bump(db, "agent_run_cost_usd_total", labels, 0.5)
                for kind in TOKEN_KINDS:
                    aggregates.bump(db, "session_tokens_total", {**labels, "kind": kind}, 1000)
                    aggregates.bump(db, "agent_run_tokens_total", {**labels, "kind": kind}, 1000)
            aggregates.bump(db, "sessions_archived_total", {"agent": f"agent{a}"}, 100)
        for det in ("doom_loop", "permission_deadlock", "retry_cascade", "quiet", "progress"):
            for verdict in VERDICTS:
                aggregates.bump(db, "findings_total", {"detector": det, "verdict": verdict}, 5)


def _measure(
    n: int, repeats: int, folder: Path, engine_name: str, dsn: str | None, path: str = "/metrics"
) -> dict[str, Any]:
    now = datetime.now(UTC)
    t = time.perf_counter()
    with fleet_store.fleet_store(engine_name, f"scrape-open-c{n}", _loader(n, now), dsn=dsn) as url:
        engine = make_engine(url)
        upgrade(engine)
        _fixed(engine, now)
        engine.dispose()
        seed_s = time.perf_counter() - t
        return _scrape(n, repeats, folder, url, seed_s, path)


def _scrape(n: int, repeats: int, folder: Path, url: str, seed_s: float, path: str) -> dict[str, Any]:
    settings = Settings(
        data_dir=folder / "data",
        database_url=url,
        ingest_token="bench-token-0123456789",  # type: ignore[arg-type]
        _env_file=None,  # type: ignore[call-arg]
    )
    with warnings.catch_warnings():  # Starlette nudges its TestClient towards httpx2
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    times, cpu = [], []
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        for _ in range(3):
            assert client.get(path).status_code == 200
        for _ in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            r = client.get(path)
            times.append(time.perf_counter() - t)
            # this process's CPU (client and app, every thread): what the load average cannot move
            cpu.append(time.process_time() - c)
            assert r.status_code == 200 and (path != "/metrics" or b"octel_store_up 1.0" in r.content)
    times.sort()
    return {
        "cycles": n,
        "sessions": n // 10,
        "seed_s": round(seed_s, 2),
        "median_ms": round(statistics.median(times) * 1000, 2),
        "p95_ms": round(times[int(0.95 * (len(times) - 1))] * 1000, 2),
        "cpu_median_ms": round(statistics.median(cpu) * 1000, 2),
        "bytes": len(r.content),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000", help="cycle counts, comma-separated")
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--engine", choices=["sqlite", "postgres"], default="sqlite")
    ap.add_argument("--dsn", help="a PostgreSQL server (superuser URL) instead of the cached cluster")
    ap.add_argument("--path", default="/metrics", choices=["/metrics", "/api/health"], help="what to time")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--check", action="store_true", help="exit 1 if the largest size misses the target")
    args = ap.parse_args()
    try:
        sizes = sorted(int(s) for s in args.sizes.split(","))
    except ValueError:
        print("bench_scrape: --sizes takes whole numbers like 10000,100000", file=sys.stderr)
        return 2
    results = []
    with tempfile.TemporaryDirectory(prefix="octel-bench-") as tmp:
        for n in sizes:
            results.append(_measure(n, args.repeats, Path(tmp), args.engine, args.dsn, args.path))
            if not args.json:
                r = results[-1]
                print(
                    f"{n:>9} cycles {n // 10:>8} sessions  seeded in {r['seed_s']:>6.1f} s  "
                    f"{args.path} median {r['median_ms']:>7.2f} ms  p95 {r['p95_ms']:>7.2f} ms  "
                    f"{r['bytes']:>8} bytes  "
                    f"CPU median {r['cpu_median_ms']:>6.2f} ms  "
                    f"load average {r['load_average']}",
                    flush=True,
                )
    base = results[0]
    for r in results:
        r["row_ratio"] = round(r["cycles"] / base["cycles"], 2)
        r["time_ratio"] = round(r["median_ms"] / base["median_ms"], 2)
        r["p95_ratio"] = round(r["p95_ms"] / base["p95_ms"], 2)
    if args.json:
        print(json.dumps({"target_ms": TARGET_MS, "results": results}, indent=2))
    else:
        for r in results:
            print(
                f"{r['cycles']:>9} cycles: rows x{r['row_ratio']:<8} time x{r['time_ratio']}"
                f"  p95 x{r['p95_ratio']}"
            )
    ok = results[-1]["median_ms"] < TARGET_MS
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    sys.exit(main())
