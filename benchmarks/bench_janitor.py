"""The janitor's rate (trees verified and deleted per second) against archiving's rate (trees
archived and indexed per second), measured in the same run on the same trees.

The OpenCode 2 fake (tests/opencode2/fake_server.py) serves ``--trees`` trees of ``--children``
subagents each, every session ``--messages`` messages. Each tree is archived into a fresh
SQLite store and archive folder as `octel archive` does it (walk, redact, write, read back,
index), timed; then one janitor pass (`telemetry.tower.janitor.sweep`, ``--older-than 0s``)
lists, reads every archive back and validates it, counts the server's messages again, re-checks
the live states and deletes every tree, timed. The janitor reads what archiving read (it counts
the server's messages in full), so a ratio near 1 is expected; under 0.5 would mean the
verification costs more than the archive it verifies.

Run: python benchmarks/bench_janitor.py [--trees 30] [--children 3] [--messages 40]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "opencode2"))

from fake_server import FakeOpenCode2, serve

from telemetry.archive_store import archive_store
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
from telemetry.tower.janitor import sweep
from telemetry.tree_archiving import archive_session_tree_async, opencode_client


def _trees(fake: FakeOpenCode2, trees: int, children: int, messages: int) -> list[str]:
    roots = []
    for t in range(trees):
        root = fake.session(title=f"tree {t}")
        for sid in [root] + [fake.session(parent=root, title=f"job {i}") for i in range(children)]:
            for k in range(messages // 2):
                fake.user(sid, f"step {k}")
                fake.step(sid, [{"type": "text", "text": "hello " * 20}])
            fake.idle(sid)
        roots.append(root)
    return roots


async def _run(fake: FakeOpenCode2, roots: list[str], data: Path) -> tuple[float, float, int]:
    settings = Settings(data_dir=data, opencode_password=fake.password, _env_file=None)  # type: ignore[call-arg]
    engine = make_engine(settings.db_url)
    upgrade(engine)
    try:
        async with httpx.AsyncClient(timeout=30.0) as http:
            t0 = time.perf_counter()
            for root in roots:
                out = await archive_session_tree_async(
                    root, settings=settings, engine=engine, server_url=fake.url, http=http
                )
                assert out.ok, out.to_dict()
            archived = time.perf_counter() - t0
            t0 = time.perf_counter()
            report = await sweep(
                opencode_client(http, fake.url, settings),
                engine,
                archive_store(settings, engine),
                older_than_s=0.0,
                redactor=redactor_for(settings),
            )
            cleaned = time.perf_counter() - t0
    finally:
        engine.dispose()
    return archived, cleaned, report.trees_deleted


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trees", type=int, default=30)
    ap.add_argument("--children", type=int, default=3)
    ap.add_argument("--messages", type=int, default=40)
    a = ap.parse_args()
    with serve() as fake, tempfile.TemporaryDirectory() as tmp:
        roots = _trees(fake, a.trees, a.children, a.messages)
        archived, cleaned, deleted = asyncio.run(_run(fake, roots, Path(tmp)))
        assert deleted == a.trees and not fake.sessions, f"{deleted} of {a.trees} trees deleted"
    rate_a, rate_j = a.trees / archived, a.trees / cleaned
    print(f"trees: {a.trees} x {1 + a.children} sessions x {a.messages} messages (OpenCode 2 fake)")
    print(f"archive  {archived:6.2f} s  {rate_a:7.1f} trees/s")
    print(f"janitor  {cleaned:6.2f} s  {rate_j:7.1f} trees/s (verified and deleted)")
    print(f"ratio janitor/archive {rate_j / rate_a:.2f}")


if __name__ == "__main__":
    main()
