"""Ingestion throughput: cycle begin+finish pairs per second through a live `octel serve`.

Starts `octel serve` on SQLite and on a real PostgreSQL (a throwaway, durable cluster: fsync on,
as a fleet runs it), then W writers (8 and 32 by default) each begin and finish cycles over HTTP
with the ingest token, as dispatchers do. Reported per engine and writer count: pairs per second
and the ratio against a baseline measured in the same run against the same server (`GET
/api/health` requests per second from the same number of writers), so a slower machine moves
both. Each server runs with each `--serve-workers` count (`octel serve --workers N`). The
CPU of octel's processes, of PostgreSQL's (its server and backends) and of the load generator
itself (`ingest_client.py`) is read from /proc and given per pair, so the cores a rate needs
can be told on any machine, the server's apart from the client's. The machine's load
average is printed beside each figure. Run from another octel tree's folder
(`cd old-tree && python /path/to/bench_ingest.py`), the server is that tree's (`python -m cli`
takes the current folder first): a before and after on the same machine, minutes apart.
Target: ≥ 1,000 pairs per second on PostgreSQL with 32 writers.

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
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pgserver
from ingest_client import TOKEN, rate_of
from realparts import free_port


@contextmanager
def _serve(data_dir: Path, database_url: str | None, workers: int) -> Iterator[tuple[str, int]]:
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
        yield base, proc.pid  # the server leads its own process group (start_new_session)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)


def _stats() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/PID/stat after the command name) of every process."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, ValueError):
            continue


def _cpu_seconds(pgid: int) -> float:
    """User+system CPU of every process in the server's group (the workers too), from /proc."""
    total = 0
    for _pid, fields in _stats():
        if int(fields[2]) == pgid:  # pgrp
            total += int(fields[11]) + int(fields[12])  # utime, stime (children reaped count too)
    return total / os.sysconf("SC_CLK_TCK")


def _postmaster(database_url: str | None) -> int | None:
    """The pid of the PostgreSQL server listening on the URL's port (started by this run)."""
    if not database_url:
        return None
    port = database_url.rsplit(":", 1)[1].split("/", 1)[0]
    for pid, _fields in _stats():
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"postgres") and b"-p" in argv and port.encode() in argv:
            return pid
    return None


def _db_cpu_seconds(postmaster: int | None) -> float:
    """CPU of the PostgreSQL server: the postmaster, its backends and background workers alive
    now, and the children it reaped (pooled connections live through a run)."""
    if postmaster is None:
        return 0.0
    total = 0
    for pid, fields in _stats():
        if pid == postmaster:
            total += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        elif int(fields[1]) == postmaster:  # ppid
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


async def _ok(c: Any, method: str, path: str, body: dict[str, Any] | None = None) -> None:
    status, answer = await c.request(method, path, body)
    if status >= 300:
        raise RuntimeError(f"{method} {path}: {status} {answer[:200]!r}")


def _measure(
    base: str, pgid: int, writers: int, pairs: int, tag: str, client: str, postmaster: int | None
) -> dict[str, Any]:
    async def health(c: Any, w: int, i: int) -> None:
        await _ok(c, "GET", "/api/health")

    async def pair(c: Any, w: int, i: int) -> None:
        cid = f"{tag}-w{w}-{i}"
        await _ok(c, "POST", "/api/v1/cycles/begin", {"cycle_id": cid, "driver": f"d{w % 6}"})
        body = {"cycle_id": cid, "driver": f"d{w % 6}", "terminal_state": "done", "worker_outcome": "merged"}
        await _ok(c, "POST", "/api/v1/cycles/finish", body)

    cpu0, me0 = _cpu_seconds(pgid), time.process_time()
    baseline = rate_of(writers, pairs, health, base, client)
    cpu1, me1, db1 = _cpu_seconds(pgid), time.process_time(), _db_cpu_seconds(postmaster)
    rate = rate_of(writers, pairs, pair, base, client)
    cpu2, me2, db2 = _cpu_seconds(pgid), time.process_time(), _db_cpu_seconds(postmaster)
    n = writers * pairs
    load = [round(x, 2) for x in os.getloadavg()]
    return {
        "writers": writers,
        "pairs_per_s": round(rate, 1),
        "health_per_s": round(baseline, 1),
        "ratio": round(rate / baseline, 3),
        "server_cpu_ms_per_health": round((cpu1 - cpu0) / n * 1000, 2),
        "server_cpu_ms_per_pair": round((cpu2 - cpu1) / n * 1000, 2),
        "database_cpu_ms_per_pair": round((db2 - db1) / n * 1000, 2) if postmaster else None,
        "client_cpu_ms_per_health": round((me1 - me0) / n * 1000, 2),
        "client_cpu_ms_per_pair": round((me2 - me1) / n * 1000, 2),
        "load_average": load,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", default="8,32")
    ap.add_argument("--pairs", type=int, default=300, help="begin+finish pairs per writer")
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--serve-workers", default="1,2", help="`octel serve --workers` counts to measure")
    ap.add_argument(
        "--client",
        choices=["lean", "httpx"],
        default="lean",
        help="lean: raw HTTP/1.1, one loop; httpx: a thread and client per writer",
    )
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
            postmaster = _postmaster(url)
            for sw in (int(x) for x in args.serve_workers.split(",")):
                with _serve(Path(tmp) / engine, url, sw) as (base, pgid):
                    for w in (int(x) for x in args.writers.split(",")):
                        r = {
                            "engine": engine,
                            "serve_workers": sw,
                            **_measure(
                                base,
                                pgid,
                                w,
                                args.pairs,
                                f"{engine}{sw}-{w}-{args.client}",
                                args.client,
                                postmaster,
                            ),
                        }
                        results.append(r)
                        if not args.json:
                            print(
                                f"{engine:9} --workers {sw} {w:3} writers: {r['pairs_per_s']:8.1f} pairs/s "
                                f"(health {r['health_per_s']:7.1f} req/s, ratio {r['ratio']:.3f}; "
                                f"server CPU {r['server_cpu_ms_per_health']} ms a health check, "
                                f"{r['server_cpu_ms_per_pair']} ms a pair; PostgreSQL CPU "
                                f"{r['database_cpu_ms_per_pair']} ms a pair; client CPU "
                                f"{r['client_cpu_ms_per_health']} / {r['client_cpu_ms_per_pair']} ms; "
                                f"load average {r['load_average']})",
                                flush=True,
                            )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
