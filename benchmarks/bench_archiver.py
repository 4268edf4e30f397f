"""Archiver benchmark: one run, ratios against baselines measured in the same run.

1. Walk a 50-session tree of 200 messages each from a loopback HTTP server with a few ms of
   latency per request: octel's concurrent walk vs the same walk one request at a time.
2. Redaction + atomic write throughput (MB/s) vs a plain orjson load + dump of the same bytes.
3. Peak traced memory (tracemalloc) of redacting and writing one session vs its archive size.

Targets: walk >= 5x faster; redaction + write <= 2x the load + dump time; peak < 4x the size.
Run: python benchmarks/bench_archiver.py [--sessions 50] [--messages 200] [--latency 0.004]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import httpx
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "archiver"))

from archiver_fakes import FakeOpenCode, LoopbackServer, session

from archiver.archive import ArchiveResult, serialise, write_documents
from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.files import write_atomic
from archiver.redact import Redactor
from archiver.walk import TreeSnapshot, walk_tree

OUTPUT = "total 24\n-rw-r--r-- 1 dev dev  812 README.md\n" * 12


def _message(sid: str, n: int) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": f"msg_{n:06d}",
        "sessionID": sid,
        "role": "user" if n % 2 == 0 else "assistant",
        "time": {"created": 1_000_000 + n, "completed": 1_000_500 + n},
    }
    parts: list[dict[str, Any]] = [
        {"id": f"prt_{n:06d}a", "type": "text", "text": f"Step {n}: looking at the build output. " * 8}
    ]
    if info["role"] == "assistant":
        info.update(
            cost=0.0012,
            finish="tool-calls",
            modelID="fake-model",
            providerID="fake",
            tokens={"input": 1200, "output": 80, "reasoning": 0, "cache": {"read": 300, "write": 0}},
        )
        parts.append(
            {
                "id": f"prt_{n:06d}b",
                "type": "tool",
                "tool": "bash",
                "callID": f"c{n}",
                "state": {
                    "status": "completed",
                    "input": {"command": f"ls -la dir{n}"},
                    "output": OUTPUT,
                    "title": "ls",
                    "metadata": {"exit": 0},
                    "time": {"start": 1, "end": 2},
                },
            }
        )
    return {"info": info, "parts": parts}


def make_tree(sessions: int, messages: int, tag: str = "") -> FakeOpenCode:
    """A root (`ses_<tag>root`) with children over three levels (a wide tree, as dispatchers
    make); `tag` makes its session ids its own."""
    fake = FakeOpenCode()
    ids = [f"ses_{tag}root"]
    fake.add(session(ids[0], cost=1.0, tokens=10), 0)
    for i in range(1, sessions):
        parent = ids[(i - 1) // 7]  # up to 7 children per session
        sid = f"ses_{tag}{i:04d}"
        fake.add(
            session(sid, parent, title=f"job {i} (@general subagent)", agent="general", cost=0.1, tokens=10),
            0,
        )
        ids.append(sid)
    for sid in ids:
        fake.messages[sid] = [_message(sid, n) for n in range(messages)]
    return fake


async def _walk(url: str, concurrency: int) -> tuple[float, TreeSnapshot]:
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=60.0, limits=limits) as http:
        client = OpenCodeClient(http, url, max_concurrency=concurrency)
        t = time.perf_counter()
        snap = await walk_tree(client, "ses_root")
        return time.perf_counter() - t, snap


def _serve(sessions: int, messages: int, latency: float, port_q: Any, stop: Any) -> None:
    with LoopbackServer(make_tree(sessions, messages), latency=latency, cache=True) as srv:
        port_q.put(srv.url)
        stop.wait()


def bench_walk(sessions: int, messages: int, latency: float) -> tuple[dict[str, float], TreeSnapshot]:
    # the server runs in its own process, so it never competes with the client for the GIL
    ctx = multiprocessing.get_context("spawn")
    port_q, stop = ctx.Queue(), ctx.Event()
    proc = ctx.Process(target=_serve, args=(sessions, messages, latency, port_q, stop))
    proc.start()
    try:
        url = port_q.get(timeout=120)
        asyncio.run(_walk(url, 8))  # warm-up: the server builds each answer once
        serial, snap = asyncio.run(_walk(url, 1))
        assert not snap.walk_errors and len(snap.sessions) == sessions
        # both walks start with no walked tree alive: one still alive makes every full
        # garbage collection during the next walk longer
        del snap
        fast, snap = asyncio.run(_walk(url, 8))
    finally:
        stop.set()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
    assert not snap.walk_errors and len(snap.sessions) == sessions
    assert sum(len(s.messages) for s in snap.sessions) == sessions * messages
    return {
        "walk_serial_s": serial,
        "walk_octel_s": fast,
        "walk_speedup": serial / fast,
        "requests": float(snap.requests),
    }, snap


def bench_write(docs: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    redactor = Redactor(b"k" * 32, ["a-configured-secret-value"])
    blobs = [orjson.dumps(d) for d in docs]
    size = sum(len(b) for b in blobs)
    t = time.perf_counter()
    for b in blobs:
        orjson.dumps(orjson.loads(b))
    base = time.perf_counter() - t
    t = time.perf_counter()
    for d in docs:
        serialise(d, redactor)
    redact_only = time.perf_counter() - t
    result = ArchiveResult("ses_root", "now")
    t = time.perf_counter()
    write_documents(docs, folder, redactor, result)
    ours = time.perf_counter() - t
    assert len(result.files) == len(docs) and not result.write_errors
    mb = size / 1e6
    return {
        "archive_mb": mb,
        "load_dump_mb_s": mb / base,
        "redact_write_mb_s": mb / ours,
        "redact_write_vs_load_dump": ours / base,
        "redact_only_vs_load_dump": redact_only / base,
        "engine": redactor.engine,
    }


def bench_tree_memory(snap: TreeSnapshot, folder: Path) -> dict[str, float]:
    """Peak of building, redacting and writing the whole tree, the walked data excluded."""
    redactor = Redactor(b"k" * 32, ["a-configured-secret-value"])
    tracemalloc.start()
    before, _ = tracemalloc.get_traced_memory()
    docs = build_documents(snap, archived_at="2026-01-02T00:00:00.000Z", label="mem", score=False)
    result = ArchiveResult("ses_root", "now")
    write_documents(docs, folder, redactor, result)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = sum(p.stat().st_size for p in result.files)
    return {
        "tree_mb": size / 1e6,
        "tree_peak_mb": (peak - before) / 1e6,
        "tree_peak_vs_archive": (peak - before) / size,
    }


def bench_memory(doc: dict[str, Any], folder: Path) -> dict[str, float]:
    redactor = Redactor(b"k" * 32, ["a-configured-secret-value"])
    tracemalloc.start()
    tracemalloc.reset_peak()
    before, _ = tracemalloc.get_traced_memory()
    data, _ = serialise(doc, redactor)
    write_atomic(folder / "one.json", data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    size = (folder / "one.json").stat().st_size
    return {
        "one_archive_mb": size / 1e6,
        "peak_mb": (peak - before) / 1e6,
        "peak_vs_archive": (peak - before) / size,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=50)
    ap.add_argument("--messages", type=int, default=200)
    ap.add_argument("--latency", type=float, default=0.004, help="seconds added per request")
    a = ap.parse_args()
    walk, snap = bench_walk(a.sessions, a.messages, a.latency)
    docs = build_documents(snap, archived_at="2026-01-01T00:00:00.000Z", label="bench")
    with tempfile.TemporaryDirectory() as tmp:
        write = bench_write(docs, Path(tmp) / "archives")
        mem = bench_memory(max(docs, key=lambda d: len(d["messages"])), Path(tmp))
        tree_mem = bench_tree_memory(snap, Path(tmp) / "tree")
    print(
        f"walk: {a.sessions} sessions x {a.messages} messages, {walk['requests']:.0f} requests, "
        f"{a.latency * 1000:.1f} ms latency"
    )
    print(
        f"  one at a time {walk['walk_serial_s']:.2f} s, octel {walk['walk_octel_s']:.2f} s, "
        f"speed-up {walk['walk_speedup']:.1f}x (target >= 5x)"
    )
    print(
        f"redaction + write ({write['engine']}): {write['archive_mb']:.1f} MB at "
        f"{write['redact_write_mb_s']:.0f} MB/s; orjson load + dump "
        f"{write['load_dump_mb_s']:.0f} MB/s; ratio {write['redact_write_vs_load_dump']:.2f}x "
        f"(target <= 2x); serialise + redact alone {write['redact_only_vs_load_dump']:.2f}x"
    )
    print(
        f"memory: peak {mem['peak_mb']:.1f} MB for a {mem['one_archive_mb']:.2f} MB archive, "
        f"{mem['peak_vs_archive']:.2f}x (target < 4x)"
    )
    print(
        f"  whole tree: peak {tree_mem['tree_peak_mb']:.1f} MB for {tree_mem['tree_mb']:.1f} MB "
        f"of archives, {tree_mem['tree_peak_vs_archive']:.2f}x (walked messages not counted)"
    )
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
