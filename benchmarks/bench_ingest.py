"""Ingestion throughput: cycle begin+finish pairs per second through a live `octel serve`.

Starts `octel serve` on SQLite and on a real PostgreSQL (a throwaway, durable cluster: fsync on,
as a fleet runs it), then W writers (8 and 32 by default) each begin and finish cycles over HTTP
with the ingest token, as dispatchers do. Reported per engine and writer count: pairs per second
and the ratio against a baseline measured in the same run against the same server (`GET
/api/health` requests per second from the same number of writers), so a slower machine moves
both. Each server runs with each `--serve-workers` count (`octel serve --workers N`). The
machine's load average is printed beside each figure. Target: ≥ 1,000 pairs per second on
PostgreSQL with 32 writers.

    python benchmarks/bench_ingest.py [--writers 8,32] [--pairs 300] [--engines sqlite,postgres]
                                      [--serve-workers 1,2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pgserver
from realparts import free_port

TOKEN = "bench-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@contextmanager
def _serve(data_dir: Path, database_url: str | None, workers: int) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "OCTEL_DATA_DIR": str(data_dir), "OCTEL_INGEST_TOKEN": TOKEN}
    if database_url:
        env["OCTEL_DATABASE_URL"] = database_url
    cmd = [sys.executable, "-m", "cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--workers", str(workers)]
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                if httpx.get(base + "/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        else:
            raise RuntimeError("octel serve did not start")
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


def _rate(writers: int, per_writer: int, job: Callable[[httpx.Client, int, int], None], base: str) -> float:
    """Operations per second when `writers` threads each run `job` `per_writer` times."""
    barrier = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        with httpx.Client(base_url=base, headers=AUTH, timeout=120) as c:
            c.get("/api/health")  # connect before the clock starts
            barrier.wait()
            try:
                for i in range(per_writer):
                    job(c, w, i)
            except BaseException as e:  # reported after the run, not swallowed
                errors.append(e)

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    return writers * per_writer / elapsed


def _measure(base: str, writers: int, pairs: int, tag: str) -> dict[str, Any]:
    def health(c: httpx.Client, w: int, i: int) -> None:
        c.get("/api/health").raise_for_status()

    def pair(c: httpx.Client, w: int, i: int) -> None:
        cid = f"{tag}-w{w}-{i}"
        c.post("/api/v1/cycles/begin", json={"cycle_id": cid, "driver": f"d{w % 6}"}).raise_for_status()
        body = {"cycle_id": cid, "driver": f"d{w % 6}", "terminal_state": "done", "worker_outcome": "merged"}
        c.post("/api/v1/cycles/finish", json=body).raise_for_status()

    baseline = _rate(writers, pairs, health, base)
    rate = _rate(writers, pairs, pair, base)
    load = [round(x, 2) for x in os.getloadavg()]
    return {"writers": writers, "pairs_per_s": round(rate, 1), "health_per_s": round(baseline, 1),
            "ratio": round(rate / baseline, 3), "load_average": load}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", default="8,32")
    ap.add_argument("--pairs", type=int, default=300, help="begin+finish pairs per writer")
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--serve-workers", default="1,2", help="`octel serve --workers` counts to measure")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="octel-bench-ingest-") as tmp, ExitStack() as stack:
        for engine in args.engines.split(","):
            url = None
            if engine == "postgres":
                if pgserver.pg_binaries() is None:
                    print("skipping postgres: " + pgserver.HOW, file=sys.stderr)
                    continue
                url = pgserver.create_database(stack.enter_context(pgserver.postgres_server(durable=True)))
            for sw in (int(x) for x in args.serve_workers.split(",")):
                with _serve(Path(tmp) / engine, url, sw) as base:
                    for w in (int(x) for x in args.writers.split(",")):
                        r = {
                            "engine": engine,
                            "serve_workers": sw,
                            **_measure(base, w, args.pairs, f"{engine}{sw}-{w}"),
                        }
                        results.append(r)
                        if not args.json:
                            print(f"{engine:9} --workers {sw} {w:3} writers: {r['pairs_per_s']:8.1f} pairs/s "
                                  f"(health {r['health_per_s']:7.1f} req/s, ratio {r['ratio']:.3f}; "
                                  f"load average {r['load_average']})", flush=True)  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
