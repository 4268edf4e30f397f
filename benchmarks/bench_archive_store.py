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

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import archive_setup
from archive_setup import archive_documents, migrated, redactor

from archiver.store import ArchiveStore, FolderStore
from telemetry.queries.session_detail import session_detail
from telemetry.store.archive_docs import DatabaseStore
from telemetry.store.db import session_scope


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


def measure(
    new_url: Callable[[], str], work: Path, docs: list[dict[str, Any]], rounds: int
) -> dict[str, Any]:
    red = redactor()
    out: dict[str, Any] = {}
    with migrated(new_url()) as engine:
        stores: dict[str, ArchiveStore] = {
            "files": FolderStore(work / "archives"),
            "database": DatabaseStore(engine),
        }
        for kind, store in stores.items():
            archive_documents(docs, store, engine, red)  # warm-up: tables, pages, caches
            sessions = [str(d["session_id"]) for d in docs]
            writes, reads = [], []
            for _ in range(rounds):
                t = time.perf_counter()
                archive_documents(docs, store, engine, red)
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
    return out


def _line(r: dict[str, Any]) -> str:
    return (
        f"write files {r['files_write_s'] * 1000:7.1f} ms, "
        f"database {r['database_write_s'] * 1000:7.1f} ms "
        f"({r['write_ratio']:.2f}x); read files {r['files_read_s'] * 1000:7.1f} ms, "
        f"database {r['database_read_s'] * 1000:7.1f} ms ({r['read_ratio']:.2f}x; target <= 2x); "
        f"compressed {r['compression']:.1f}x"
    )


def main() -> int:
    return archive_setup.main(__doc__, measure, _line, rounds=5, prefix="octel-bench-store-")


if __name__ == "__main__":
    raise SystemExit(main())
