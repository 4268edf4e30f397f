"""The archive benchmarks' shared set-up: their options, the documents of one generated tree,
a migrated store, and archiving the documents into it the way `octel archive` does."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import Engine

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "archiver"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_archiver import make_tree
from engines import Result, per_engine

from archiver.archive import ArchiveResult, archive_tree, remove_superseded, write_documents
from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.redact import Redactor
from archiver.store import ArchiveStore
from archiver.walk import walk_tree
from telemetry.services.index.indexing import index_records
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade

__all__ = [
    "archive_documents",
    "archive_whole",
    "main",
    "migrated",
    "own_garbage",
    "redactor",
    "tree_documents",
]

Measure = Callable[[Callable[[], str], Path, list[dict[str, Any]], int], Result]


def main(
    doc: str | None, measure: Measure, line: Callable[[Result], str], *, rounds: int, prefix: str
) -> int:
    """An archive benchmark's command line: the documents of one tree of ``--sessions`` x
    ``--messages``, then ``measure(new_database_url, folder, documents, rounds)`` on each of
    ``--engines`` in a folder of its own, each result said by ``line`` after the engine and
    the tree's size (or ``--json``)."""
    ap = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    ap.add_argument("--sessions", type=int, default=40)
    ap.add_argument("--messages", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--engines", default="sqlite,postgres")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    docs = tree_documents(args.sessions, args.messages)
    size = round(sum(len(json.dumps(d)) for d in docs) / 1e6, 1)

    def run(name: str, new_url: Callable[[], str], tmp: Path) -> Iterator[Result]:
        work = tmp / name
        work.mkdir()
        r = {"engine": name, "documents": len(docs), "mb": size}
        yield {**r, **measure(new_url, work, docs, args.rounds)}

    def said(r: Result) -> str:
        return f"{r['engine']:9} {r['documents']} documents, {r['mb']:.1f} MB: {line(r)}"

    return per_engine(args.engines, prefix, run, said, as_json=args.json)


def tree_documents(sessions: int, messages: int, tag: str = "") -> list[dict[str, Any]]:
    """The archive documents of a generated tree (`make_tree`), walked from a fake OpenCode
    server."""
    fake = make_tree(sessions, messages, tag)

    async def walk() -> Any:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            return await walk_tree(OpenCodeClient(http, "http://oc.test"), f"ses_{tag}root")

    snap = asyncio.run(walk())
    return build_documents(snap, archived_at="2026-11-30T12:00:00.000Z", label="bench", score=False)


def redactor() -> Redactor:
    """A redactor with one configured secret, as a deployment has."""
    return Redactor(b"k" * 32, ["a-configured-secret-value"])


@contextmanager
def own_garbage() -> Iterator[None]:
    """Within, a measured step pays for the garbage it makes and for no other: what was left
    before is collected on entry and what is alive is frozen, so no collection within walks the
    benchmark's own heap (which a step that allocates much, parsing documents, would otherwise
    pay for at each full collection: a third of a catch-up's time, at random); the caller
    collects its step's garbage inside its timing, with `gc.collect()`."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def migrated(url: str) -> Iterator[Engine]:
    """The store at ``url`` at the newest schema, disposed of on exit."""
    engine = make_engine(url)
    upgrade(engine)
    try:
        yield engine
    finally:
        engine.dispose()


def archive_documents(
    docs: list[dict[str, Any]], store: ArchiveStore, engine: Engine, redactor: Redactor
) -> list[str]:
    """Redact, name and put the documents, then store them and their index rows in one
    transaction, then read them back, as `octel archive` does; the names written."""
    result = ArchiveResult("ses_root", "now")
    write_documents(docs, store, redactor, result)
    with session_scope(engine) as db:
        store.flush(db)
        index_records(db, result.records, redactor=redactor, written=result.written)
    problems = store.confirm()
    assert not result.write_errors and not problems, (result.write_errors, problems)
    return result.written


def archive_whole(
    fake: Any, store: ArchiveStore, engine: Engine, redactor: Redactor, root: str = "ses_root"
) -> list[str]:
    """Archive the fake server's tree from `root` as `octel archive` does, all of it: walk it,
    build the documents (scored), redact and put them, store them and their index rows in one
    transaction, read them back, remove what they supersede; the names written."""

    async def walk() -> ArchiveResult:
        async with httpx.AsyncClient(transport=fake.transport()) as http:
            client = OpenCodeClient(http, "http://oc.test")
            return await archive_tree(client, root, store, redactor, label="bench", keep_superseded=True)

    result = asyncio.run(walk())
    with session_scope(engine) as db:
        store.flush(db)
        index_records(db, result.records, redactor=redactor, written=result.written)
    problems = store.confirm()
    assert not result.write_errors and not problems, (result.write_errors, problems)
    remove_superseded(result)
    return result.written
