"""Ingestion throughput: cycle begin+finish pairs per second through a live `octel serve`.

Starts `octel serve` on SQLite and on a real PostgreSQL (a throwaway, durable cluster: fsync on,
as a fleet runs it), then W writers (8 and 32 by default) each begin and finish cycles over HTTP
with the ingest token, as dispatchers do. Reported per engine and writer count: pairs per second
and the ratio against a baseline measured in the same run against the same server (`GET
/api/health` requests per second from the same number of writers), so a slower machine moves
both. Each server runs with each `--serve-workers` count (`octel serve --workers N`). The
CPU of octel's processes and of PostgreSQL's (its server and backends) is read from /proc and
given per pair, so the cores a rate needs can be told on any machine. The machine's load
average is printed beside each figure. Run from another octel tree's folder
(`cd old-tree && python /path/to/bench_ingest.py`), the server is that tree's (`python -m cli`
takes the current folder first): a before and after on the same machine, minutes apart.
Target: ≥ 1,000 pairs per second on PostgreSQL with 32 writers.

    python benchmarks/bench_ingest.py [--writers 8,32] [--pairs 300] [--engines sqlite,postgres]
                                      [--serve-workers 1,2] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import pgserver
from realparts import free_port

TOKEN = "bench-token-0123456789"


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


class _Conn:
    """One keep-alive HTTP/1.1 connection, written and read by hand, all of them on one event
    loop: the load generator shares the server's cores, so it must cost far less CPU than the
    server (`--client httpx`, a thread and an httpx client per writer, is kept to compare)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader, self.writer = reader, writer
        self.head = f"Host: {host}\r\nAuthorization: Bearer {TOKEN}\r\n"

    @classmethod
    async def open(cls, base: str) -> _Conn:
        host, port = base.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, host)

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else b""
        extra = (
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n" if body is not None else ""
        )
        self.writer.write(f"{method} {path} HTTP/1.1\r\n{self.head}{extra}\r\n".encode() + data)
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        self.writer.close()


Job = Callable[[Any, int, int], Awaitable[None]]


class _HttpxConn:
    """The same requests through a blocking httpx client (one per writer thread)."""

    def __init__(self, base: str) -> None:
        self.client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120)

    async def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, bytes]:
        r = self.client.request(method, path, json=body)
        return r.status_code, r.content

    def close(self) -> None:
        self.client.close()


def _rate_threads(writers: int, per_writer: int, job: Job, base: str) -> float:
    barrier = threading.Barrier(writers + 1)
    errors: list[BaseException] = []

    def run(w: int) -> None:
        c = _HttpxConn(base)
        asyncio.run(c.request("GET", "/api/health"))
        barrier.wait()
        try:
            asyncio.run(_repeat(job, c, w, per_writer))
        except BaseException as e:  # reported after the run, not swallowed
            errors.append(e)
        c.close()

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


async def _repeat(job: Job, c: Any, w: int, n: int) -> None:
    for i in range(n):
        await job(c, w, i)


def _rate(writers: int, per_writer: int, job: Job, base: str, client: str = "lean") -> float:
    """Operations per second when `writers` connections each run `job` `per_writer` times,
    one after another (a dispatcher waits for each answer), all from one event loop."""
    if client == "httpx":
        return _rate_threads(writers, per_writer, job, base)

    async def run() -> float:
        conns = [await _Conn.open(base) for _ in range(writers)]
        for c in conns:  # connected and answered once before the clock starts
            await c.request("GET", "/api/health")

        t0 = time.perf_counter()
        await asyncio.gather(*(_repeat(job, conns[w], w, per_writer) for w in range(writers)))
        elapsed = time.perf_counter() - t0
        for c in conns:
            c.close()
        return writers * per_writer / elapsed

    return asyncio.run(run())


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
    baseline = _rate(writers, pairs, health, base, client)
    cpu1, me1, db1 = _cpu_seconds(pgid), time.process_time(), _db_cpu_seconds(postmaster)
    rate = _rate(writers, pairs, pair, base, client)
    cpu2, me2, db2 = _cpu_seconds(pgid), time.process_time(), _db_cpu_seconds(postmaster)
    n = writers * pairs
    load = [round(x, 2) for x in os.getloadavg()]
    return {"writers": writers, "pairs_per_s": round(rate, 1), "health_per_s": round(baseline, 1),
            "ratio": round(rate / baseline, 3),
            "server_cpu_ms_per_health": round((cpu1 - cpu0) / n * 1000, 2),
            "server_cpu_ms_per_pair": round((cpu2 - cpu1) / n * 1000, 2),
            "database_cpu_ms_per_pair": round((db2 - db1) / n * 1000, 2) if postmaster else None,
            "client_cpu_ms_per_health": round((me1 - me0) / n * 1000, 2),
            "client_cpu_ms_per_pair": round((me2 - me1) / n * 1000, 2),
            "load_average": load}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writers", default="8,32")
    ap.add_argument("--pairs", type=int, default=300, help="begin+finish pairs per writer")
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--serve-workers", default="1,2", help="`octel serve --workers` counts to measure")
    ap.add_argument("--client", choices=["lean", "httpx"], default="lean",
                    help="lean: raw HTTP/1.1, one loop; httpx: a thread and client per writer")  # fmt: skip
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
                            print(f"{engine:9} --workers {sw} {w:3} writers: {r['pairs_per_s']:8.1f} pairs/s "
                                  f"(health {r['health_per_s']:7.1f} req/s, ratio {r['ratio']:.3f}; "
                                  f"server CPU {r['server_cpu_ms_per_health']} ms a health check, "
                                  f"{r['server_cpu_ms_per_pair']} ms a pair; PostgreSQL CPU "
                                  f"{r['database_cpu_ms_per_pair']} ms a pair; client CPU "
                                  f"{r['client_cpu_ms_per_health']} / {r['client_cpu_ms_per_pair']} ms; "
                                  f"load average {r['load_average']})", flush=True)  # fmt: skip
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
