"""Archive store benchmark: the database store against the folder store, on SQLite and a real
PostgreSQL, in one run (ratios against the folder store measured beside it).

For each engine, the same tree of documents is archived through each store the way
`octel archive` does it (redact, name, put; then one transaction for the documents and their
index rows; then the read-back), and every document is read back and parsed the way the
console builds a session page without its cache (`session_detail`: the index row and the
document, parsed, in one read transaction).

Target: reads from the database store within 2x of the folder store.
Run: python benchmarks/bench_archive_store.py [--sessions 40] [--messages 100] [--rounds 5]
     [--engines sqlite,postgres] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "archiver"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import pgserver
from bench_archiver import make_tree

from archiver.archive import ArchiveResult, write_documents
from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.redact import Redactor
from archiver.store import ArchiveStore, FolderStore
from archiver.walk import walk_tree
from telemetry.queries.session_detail import session_detail
from telemetry.services.indexing import index_records
from telemetry.store.archive_docs import DatabaseStore
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade


def _docs(sessions: int, messages: int) -> list[dict[str, Any]]:
    fake = make_tree(sessions, messages)

    async def walk() -> Any:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await walk_tree(OpenCodeClient(http, "http://oc.test"), "ses_root")

    snap = asyncio.run(walk())
    return build_documents(snap, archived_at="2026-11-30T12:00:00.000Z", label="bench", score=False)


def _archive(docs: list[dict[str, Any]], store: ArchiveStore, engine: Any, redactor: Redactor) -> list[str]:
    result = ArchiveResult("ses_root", "now")
    write_documents(docs, store, redactor, result)
    with session_scope(engine) as db:
        store.flush(db)
        index_records(db, result.records, redactor=redactor)
    problems = store.confirm()
    assert not result.write_errors and not problems, (result.write_errors, problems)
    return result.written


def _read(store: ArchiveStore, engine: Any, sessions: list[str]) -> int:
    """Each session's page as the console builds it: its index row and its archive document,
    in one read transaction (`session_detail`)."""
    turns = 0
    for sid in sessions:
        with session_scope(engine, write=False) as db:
            got = session_detail(db, sid, store)
        assert got is not None and got.archive.available, sid
        turns += len(got.per_turn or [])
    return turns


def measure(url: str, folder: Path, docs: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    engine = make_engine(url)
    upgrade(engine)
    redactor = Redactor(b"k" * 32, ["a-configured-secret-value"])
    out: dict[str, Any] = {}
    try:
        stores: dict[str, ArchiveStore] = {
            "files": FolderStore(folder),
            "database": DatabaseStore(engine),
        }
        for kind, store in stores.items():
            _archive(docs, store, engine, redactor)  # warm-up: tables, pages, caches
            sessions = [str(d["session_id"]) for d in docs]
            writes, reads = [], []
            for _ in range(rounds):
                t = time.perf_counter()
                _archive(docs, store, engine, redactor)
                writes.append(time.perf_counter() - t)
                t = time.perf_counter()
                assert _read(store, engine, sessions) > 0
                reads.append(time.perf_counter() - t)
            out[f"{kind}_write_s"] = statistics.median(writes)
            out[f"{kind}_read_s"] = statistics.median(reads)
        out["write_ratio"] = out["database_write_s"] / out["files_write_s"]
        out["read_ratio"] = out["database_read_s"] / out["files_read_s"]
        with session_scope(engine, write=False) as db:
            from sqlmodel import func, select

            from telemetry.store.archive_docs import ArchiveDocument

            plain, stored = db.exec(
                select(func.sum(ArchiveDocument.size), func.sum(ArchiveDocument.stored_size))
            ).one()
        out["compression"] = plain / stored
    finally:
        engine.dispose()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = _docs(args.sessions, args.messages)
    size = sum(len(json.dumps(d)) for d in docs) / 1e6
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="octel-bench-store-") as tmp, ExitStack() as stack:
        for name in args.engines.split(","):
            if name == "postgres":
                if pgserver.pg_binaries() is None:
                    print("skipping postgres: " + pgserver.HOW, file=sys.stderr)
                    continue
                url = pgserver.create_database(stack.enter_context(pgserver.postgres_server(durable=True)))
            else:
                url = f"sqlite:///{Path(tmp) / 'octel.db'}"
            r = {"engine": name, "documents": len(docs), "mb": round(size, 1)}
            r.update(measure(url, Path(tmp) / f"archives-{name}", docs, args.rounds))
            results.append(r)
            if not args.json:
                print(
                    f"{name:9} {len(docs)} documents, {size:.1f} MB: "
                    f"write files {r['files_write_s'] * 1000:7.1f} ms, "
                    f"database {r['database_write_s'] * 1000:7.1f} ms "
                    f"({r['write_ratio']:.2f}x); read files {r['files_read_s'] * 1000:7.1f} ms, "
                    f"database {r['database_read_s'] * 1000:7.1f} ms ({r['read_ratio']:.2f}x; target <= 2x); "
                    f"compressed {r['compression']:.1f}x"
                )
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
