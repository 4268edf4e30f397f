"""The janitor: delete from an OpenCode server the root trees octel holds archived, verified
and old, and nothing else (`octel janitor`, `octel watch --delete-archived-after`).

One pass lists the server's trees and their live states, reads the store's index of them, and
keeps every tree that `tower.janitor.screen` turns away. For the rest it reads each session's
archive back from the store (parsed and validated against its schema, as `--delete-after`
does), counts the server's messages now, and asks `tower.janitor.judge`. Right before a delete
it asks the server once more whether any session of the tree is busy, retrying or waiting on
an ask. Every deletion and every tree kept is audited (`janitor_report.record_tree`); a dry
run deletes nothing and writes no row.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from archiver.client import OpenCodeClient
from archiver.errors import FetchError
from archiver.files import parse_archive
from archiver.redact import Redactor
from archiver.store import ArchiveStore
from archiver.validate import check_archive
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.tower.janitor_report import JanitorReport, JanitorTree, record_tree
from tower.janitor import ArchivedSession, TreeFacts, Verdict, judge, screen
from tower.janitor_server import count_messages, list_trees, live_states

__all__ = ["AuditFilter", "janitor_loop", "read_back", "sweep"]

Progress = Callable[[int, int], None]
# (root, reason) -> write a "kept" row for it? (the watch loop writes one per change of reason)
AuditFilter = Callable[[str, str | None], bool]
_CHUNK = 500


def _indexed(engine: Engine, ids: list[str]) -> dict[str, dict[str, str]]:
    """root id -> {session id: archive name} of the index rows of ``ids``."""
    out: dict[str, dict[str, str]] = {}
    with session_scope(engine, write=False) as db:
        for i in range(0, len(ids), _CHUNK):
            q = select(SessionIndex.session_id, SessionIndex.root_session_id, SessionIndex.archive_path)
            for sid, root, name in db.exec(q.where(col(SessionIndex.session_id).in_(ids[i : i + _CHUNK]))):
                out.setdefault(root, {})[sid] = name
    return out


def _parts(doc: Mapping[str, Any]) -> int:
    n = 0
    for m in doc.get("messages") or []:
        # 1.x messages carry parts; OpenCode 2's typed messages carry content
        items = m.get("parts", m.get("content")) if isinstance(m, Mapping) else None
        n += len(items) if isinstance(items, list) else 0
    return n


def read_back(store: ArchiveStore, sid: str, name: str) -> ArchivedSession:
    """One session's archive as stored: read, parsed, validated, measured; never raises."""
    try:
        doc = parse_archive(store.read(name), name)
        check_archive(doc)
        if doc.get("session_id") != sid:
            return ArchivedSession(sid, f"{name} holds {doc.get('session_id')!r}, not {sid}")
    except (OSError, ValueError) as exc:
        return ArchivedSession(sid, f"{type(exc).__name__}: {exc}")
    session = doc.get("session")
    times = session.get("time") if isinstance(session, Mapping) else None
    updated = times.get("updated") if isinstance(times, Mapping) else None
    stat = store.stat(name)
    return ArchivedSession(
        sid,
        None,
        messages=len(doc.get("messages") or []),
        parts=_parts(doc),
        updated_ms=int(updated)
        if isinstance(updated, int | float) and not isinstance(updated, bool)
        else None,
        bytes=stat.size if stat is not None else 0,
    )


def _when(ms: int | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000, UTC) if ms is not None else None


def _tree(facts: TreeFacts, v: Verdict, fate: str, detail: str | None = None) -> JanitorTree:
    docs = facts.archived or {}
    return JanitorTree.model_validate(
        {
            "root_session_id": facts.root_id,
            "fate": fate,
            "reason": v.reason,
            "detail": detail or v.detail,
            "sessions": len(facts.sessions),
            "messages": sum(d.messages for d in docs.values()),
            "parts": sum(d.parts for d in docs.values()),
            "archive_bytes": sum(d.bytes for d in docs.values()),
            "last_activity": _when(facts.last_activity_ms),
        }
    )


async def _verify(
    client: OpenCodeClient, store: ArchiveStore, facts: TreeFacts, names: Mapping[str, str]
) -> TreeFacts:
    archived = {sid: read_back(store, sid, names[sid]) for sid in (s.session_id for s in facts.sessions)}
    if any(a.problem for a in archived.values()):
        return TreeFacts(facts.root_id, facts.sessions, facts.live, facts.indexed, archived)
    counted = tuple(await count_messages(client, facts.sessions))
    return TreeFacts(facts.root_id, counted, facts.live, facts.indexed, archived)


async def _delete(client: OpenCodeClient, facts: TreeFacts, v: Verdict, dry_run: bool) -> JanitorTree:
    """Check the live states once more, then delete (or, in a dry run, say it would)."""
    ids = [s.session_id for s in facts.sessions]
    try:
        live = await live_states(client, asks_of=ids)
    except FetchError as exc:
        return _tree(facts, v, "failed", f"live states not read just before the delete: {exc}")
    busy = sorted(s for s in ids if s in live)
    if busy:
        kept = Verdict(
            v.root_id, False, "running", f"became {live[busy[0]]} just before the delete ({busy[0]})"
        )
        return _tree(facts, kept, "kept")
    if dry_run:
        return _tree(facts, v, "would_delete")
    try:
        done = await client.delete(facts.root_id)
    except FetchError as exc:
        if exc.status == 404:
            return _tree(facts, v, "gone", "the server no longer had the tree")
        return _tree(facts, v, "failed", f"delete failed: {exc}")
    if not done:
        return _tree(facts, v, "failed", "the server did not confirm the delete")
    return _tree(facts, v, "deleted", f"deleted: {v.detail}")


async def sweep(
    client: OpenCodeClient,
    engine: Engine,
    store: ArchiveStore,
    *,
    older_than_s: float,
    redactor: Redactor,
    dry_run: bool = False,
    now: float | None = None,
    progress: Progress | None = None,
    audit: AuditFilter | None = None,
    watcher: str | None = None,
    roots: Iterable[str] | None = None,
) -> JanitorReport:
    """One pass over the server's trees (``roots`` only, when given); ``FetchError`` when the
    server cannot be listed (down, or the credentials refused). ``now`` (epoch seconds) is the
    time the limit counts back from."""
    at = time.time() if now is None else now
    now_ms, older_ms = int(at * 1000), int(older_than_s * 1000)
    trees = await list_trees(client)
    if roots is not None:
        wanted = set(roots)
        trees = {r: t for r, t in trees.items() if r in wanted}
    live = await live_states(client)
    index = _indexed(engine, sorted({s.session_id for t in trees.values() for s in t}))
    report = JanitorReport(
        server=client.base_url, dry_run=dry_run, older_than_s=older_than_s, at=datetime.fromtimestamp(at, UTC)
    )
    for n, (root, sessions) in enumerate(sorted(trees.items()), 1):
        names = index.get(root, {})
        facts = TreeFacts(root, tuple(sessions), live, frozenset(names))
        v = screen(facts, now_ms, older_ms)
        if v is None:
            try:
                facts = await _verify(client, store, facts, names)
                v = judge(facts, now_ms, older_ms)
            except FetchError as exc:
                v = Verdict(root, False, "changed", f"the server's messages not read: {exc}")
        out = await _delete(client, facts, v, dry_run) if v.delete else _tree(facts, v, "kept")
        report.add(out)
        if not dry_run and (out.fate != "kept" or audit is None or audit(root, out.reason)):
            with session_scope(engine) as db:
                record_tree(db, client.base_url, out, redactor=redactor, at=time.time(), watcher=watcher)
        if progress is not None:
            progress(n, len(trees))
    return report


async def janitor_loop(
    client: OpenCodeClient,
    stop: asyncio.Event,
    *,
    engine: Engine,
    store: Callable[[], ArchiveStore],
    older_than_s: float,
    redactor: Redactor,
    every: float = 600.0,
    watcher: str | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> int:
    """Until ``stop``: a pass every ``every`` seconds (the first at once); a tree kept is
    audited again only when its reason changes. Returns the trees deleted."""
    said: dict[str, str | None] = {}
    deleted = 0

    def audit(root: str, reason: str | None) -> bool:
        new = root not in said or said[root] != reason
        said[root] = reason
        return new

    while not stop.is_set():
        try:
            r = await sweep(
                client,
                engine,
                store(),
                older_than_s=older_than_s,
                redactor=redactor,
                audit=audit,
                watcher=watcher,
            )
        except (FetchError, httpx.HTTPError, SQLAlchemyError) as exc:
            log(f"janitor: pass not done ({type(exc).__name__}: {exc})")
        else:
            seen = {t.root_session_id for t in r.trees}
            for gone in [k for k in said if k not in seen]:
                del said[gone]  # trees no longer on the server: nothing to remember
            deleted += r.trees_deleted
            if r.trees_deleted:
                log(
                    f"janitor: deleted {r.trees_deleted} trees ({r.sessions_deleted} sessions, "
                    f"{r.messages_deleted} messages), held by {r.archive_bytes} bytes of archive"
                )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
    return deleted
