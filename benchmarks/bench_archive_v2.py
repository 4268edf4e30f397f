"""OpenCode 2 archiving cost against OpenCode 1.x, for trees of the same size, in one run.

The same tree (sessions x messages: user/assistant pairs, one tool call a step) is served by
the 1.x loopback fake (tests/archiver/archiver_fakes.py) and by the OpenCode 2 fake
(tests/opencode2/fake_server.py), and archived through octel's client with each generation's
adapter. Reported: requests, the whole archive's wall time (server threads in this process
too, so the servers' own costs are in it), and the pure part octel adds per generation —
building the documents (converter, metrics, detectors) and serialising them.

Target: V2 / 1.x <= 1.0 for the requests and the pure part (the V2 fake answers uncached, so the
wall-time ratio leans against V2). Run: python benchmarks/bench_archive_v2.py [--sessions 20]
[--messages 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "archiver"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "opencode2"))

from archiver_fakes import FakeOpenCode, LoopbackServer, session
from fake_server import FakeOpenCode2, serve

from archiver.archive import archive_tree, serialise
from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.redact import Redactor
from archiver.walk import walk_tree

RED = Redactor(b"0" * 32)


def _v1(n_sessions: int, n_messages: int) -> FakeOpenCode:
    fake = FakeOpenCode()
    fake.add(session("ses_root", cost=0.5, tokens=10), n_messages)
    for i in range(n_sessions - 1):
        fake.add(session(f"ses_c{i}", "ses_root", title=f"job {i}", agent="general", cost=0.1), n_messages)
    return fake


def _v2(fake: FakeOpenCode2, n_sessions: int, n_messages: int) -> str:
    root = fake.session(title="root")
    for sid in [root] + [fake.session(parent=root, title=f"job {i}") for i in range(n_sessions - 1)]:
        for k in range(n_messages // 2):
            fake.user(sid, f"step {k}")
            fake.step(sid, [{"type": "text", "text": "hello"}])
    return root


async def _archive(url: str, root: str, password: str | None) -> tuple[float, int, Any]:
    with tempfile.TemporaryDirectory() as out:
        async with httpx.AsyncClient(timeout=30.0) as http:
            t0 = time.perf_counter()
            res = await archive_tree(OpenCodeClient(http, url, password=password), root, Path(out), RED)
            wall = time.perf_counter() - t0
            assert res.complete, res.to_dict()
            tree = await walk_tree(OpenCodeClient(http, url, password=password), root)
    return wall, res.requests, tree


def _pure(tree: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for doc in build_documents(tree, archived_at="2026-12-01T00:00:00.000Z"):
            serialise(doc, RED)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    with LoopbackServer(_v1(a.sessions, a.messages)) as srv:
        runs1 = [asyncio.run(_archive(srv.url, "ses_root", None)) for _ in range(a.repeat)]
    with serve() as fake:
        root = _v2(fake, a.sessions, a.messages)
        runs2 = [asyncio.run(_archive(fake.url, root, fake.password)) for _ in range(a.repeat)]
    wall1, wall2 = (statistics.median(r[0] for r in runs) for runs in (runs1, runs2))
    req1, req2 = runs1[0][1], runs2[0][1]
    pure1, pure2 = _pure(runs1[0][2], a.repeat), _pure(runs2[0][2], a.repeat)
    print(f"tree: {a.sessions} sessions x {a.messages} messages")
    print(f"requests     1.x {req1:6d}   V2 {req2:6d}   ratio {req2 / req1:.2f}")
    print(f"build+write  1.x {pure1 * 1000:6.1f} ms V2 {pure2 * 1000:6.1f} ms ratio {pure2 / pure1:.2f}")
    print(f"archive wall 1.x {wall1 * 1000:6.1f} ms V2 {wall2 * 1000:6.1f} ms ratio {wall2 / wall1:.2f}")


if __name__ == "__main__":
    main()
