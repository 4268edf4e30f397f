"""The Python API for dispatchers: archive a session tree and index it, never raising.

    from telemetry.archiving import archive_session_tree
    outcome = archive_session_tree("ses_…", settings=Settings(), label="nightly",
                                   secret_values=["…"], delete_after=True)
    if not outcome.ok: log(outcome.errors)

Deleting after archiving happens only when every session of the tree was fetched in full,
written, read back and found valid, and indexed; otherwise the tree stays on the server and
``outcome.delete_error`` says why. The order survives a crash at any moment: new files are
written, the index commits, and only then are the older files of the same sessions removed.
With the database store (``OCTEL_ARCHIVE_STORE=database``) the documents commit in the index's
own transaction and are read back after it, before the tree may be deleted.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import select

from archiver.actions import Rules
from archiver.archive import ArchiveResult, archive_tree, delete_tree, remove_superseded
from archiver.client import OpenCodeClient
from archiver.live_board import LiveRow
from archiver.live_messages import MessageBatch
from archiver.walk import TreeSnapshot
from archiver.watch import History, WatchConfig, Watcher
from telemetry.archive_store import archive_store
from telemetry.queries.live import LiveChange, live_change
from telemetry.services.indexing import IndexStats, index_records, record_findings
from telemetry.services.live import forget_live, store_live_rows
from telemetry.services.live_messages import store_live_messages
from telemetry.services.lost import archive_from_mirror, root_gone, with_mirror
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex
from telemetry.timeutil import utcnow
from telemetry.watching import act_loop, follow, holder_name

__all__ = [
    "ArchiveOutcome",
    "archive_session_tree",
    "archive_session_tree_async",
    "redactor_for",
    "watch_server",
    "watch_servers",
]


@dataclass
class ArchiveOutcome:
    root_session_id: str
    result: ArchiveResult | None = None
    indexed: IndexStats = field(default_factory=IndexStats)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.complete and not self.errors

    @property
    def files(self) -> list[Path]:
        return self.result.files if self.result else []

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_session_id": self.root_session_id,
            "ok": self.ok,
            **(self.result.to_dict() if self.result else {}),
            "indexed": {
                "new": self.indexed.new,
                "updated": self.indexed.updated,
                "findings_new": self.indexed.findings_new,
            },
            "errors": self.errors,
        }


def _record_failures(engine: Engine, result: ArchiveResult) -> None:
    kinds = [str(e.get("error_kind")) for e in result.walk_errors]
    kinds += ["write"] * len(result.write_errors)
    if not kinds:
        return
    with session_scope(engine) as db:
        for kind in kinds:
            bump(db, "archive_failures_total", {"error_kind": kind}, 1)


def _stored_label(engine: Engine, root_id: str) -> str | None:
    """The label a tree was archived under before: a re-archive without one keeps it (and its
    file name), rather than falling back to no label."""
    try:
        with session_scope(engine, write=False) as db:
            return db.exec(select(SessionIndex.label).where(SessionIndex.session_id == root_id)).first()
    except SQLAlchemyError:  # a new store without tables yet, or unreachable: nothing stored
        return None


def _export_later(settings: Settings, root_id: str) -> None:
    """Queue the tree for OTLP export when it is configured; never waits, never raises."""
    try:
        # imported here: the OpenTelemetry SDK costs a command that never exports (an import
        # of transcripts, say) a second of start-up
        from telemetry.otel_export.background import background_for

        bg = background_for(settings)
        if bg is not None:
            bg.submit(root_id)
    except Exception:  # export is a side road: archiving has already succeeded
        pass


async def archive_session_tree_async(
    root_id: str,
    *,
    settings: Settings,
    engine: Engine | None = None,
    server_url: str | None = None,
    label: str | None = None,
    secret_values: Sequence[str] = (),
    delete_after: bool = False,
    compress: bool = False,
    http: httpx.AsyncClient | None = None,
    status_history: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    permission_events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    cycle_id: str | None = None,
    tree: TreeSnapshot | None = None,
) -> ArchiveOutcome:
    outcome = ArchiveOutcome(root_id)
    own_engine = engine is None
    try:
        redactor = redactor_for(settings, secret_values)
        url = server_url or settings.opencode_url
        engine = engine or make_engine(settings.db_url)
        if own_engine and settings.archive_store_kind == "database":
            upgrade(engine)  # the documents go into a table of the store
        if label is None:
            label = _stored_label(engine, root_id)
        store = archive_store(settings, engine)
        client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))
        try:
            client = OpenCodeClient(client_http, url)
            result = await archive_tree(
                client,
                root_id,
                store,
                redactor,
                label=label,
                compress=compress,
                status_history=status_history,
                permission_events=permission_events,
                tree=tree,
                keep_superseded=True,
                max_bytes=settings.archive_max_bytes,
            )
            outcome.result = result
            if own_engine and settings.archive_store_kind == "files":
                upgrade(engine)
            if result.records:
                with session_scope(engine) as db:
                    store.flush(db)  # the database store: documents in the index's transaction
                    outcome.indexed = index_records(db, result.records, redactor=redactor, cycle_id=cycle_id)
                result.write_errors += store.confirm()  # read back before anything is deleted
            remove_superseded(result)  # only once the index names the new documents
            _record_failures(engine, result)
            if result.records:
                _export_later(settings, root_id)
            if delete_after:
                await delete_tree(client, result)
        finally:
            if http is None:
                await client_http.aclose()
    except Exception as exc:  # dispatchers get a result, never an exception
        outcome.errors.append(f"{type(exc).__name__}: {exc}")
        if delete_after and outcome.result is not None and outcome.result.delete_error is None:
            outcome.result.delete_error = "not deleted: the archive could not be indexed"
    finally:
        if own_engine and engine is not None:
            engine.dispose()
    return outcome


def archive_session_tree(root_id: str, *, settings: Settings, **kw: Any) -> ArchiveOutcome:
    """Synchronous form of ``archive_session_tree_async`` (for code without an event loop)."""
    try:
        return asyncio.run(archive_session_tree_async(root_id, settings=settings, **kw))
    except Exception as exc:
        return ArchiveOutcome(root_id, errors=[f"{type(exc).__name__}: {exc}"])


async def watch_server(
    settings: Settings,
    stop: asyncio.Event,
    *,
    engine: Engine,
    server_url: str | None = None,
    label: str | None = None,
    config: WatchConfig | None = None,
    log: Callable[[str], None] = lambda _m: None,
    http: httpx.AsyncClient | None = None,
    on_change: Callable[[LiveChange], None] | None = None,
    rules: Rules | None = None,
    lease_seconds: float | None = None,
) -> Watcher:
    """Follow one OpenCode server until ``stop`` is set: keep its live rows, archive and index
    each root tree when it goes quiet (and again after it changes), store live findings, abort
    when configured. ``on_change`` hears every row whose state changed; ``rules`` act on live
    sessions (audited); with ``lease_seconds``, follow only while this process holds the
    server's lease in the store (`telemetry.watching`)."""
    url = server_url or settings.opencode_url
    aborted: dict[str, str] = {}
    own_http = http is None
    client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))

    async def on_archive(root: str, status: History, perms: History) -> bool:
        out = await archive_session_tree_async(
            root,
            settings=settings,
            engine=engine,
            server_url=url,
            label=label,
            http=client_http,
            status_history=status,
            permission_events=perms,
        )
        if root in aborted:
            with session_scope(engine) as db:
                row = db.exec(select(SessionIndex).where(SessionIndex.session_id == root)).first()
                if row is not None:
                    row.error_kind = aborted[root]
                    db.add(row)
        res, watcher = out.result, terms[-1]
        if root_gone(res) and root not in watcher.mirror.handed:  # deleted while we read it
            watcher.mirror.handed.add(root)
            await on_rescue(root, watcher.mirror.snapshot(root, url), status, perms)
            return False
        log(
            f"archived {root}: {res.sessions_found if res else 0} sessions, "
            f"{'complete' if out.ok else 'with errors'}"
        )
        return out.ok

    redactor = redactor_for(settings)
    on_rescue = functools.partial(
        archive_from_mirror, archive=archive_session_tree_async, engine=engine, redactor=redactor,
        server=url, log=log, settings=settings, server_url=url, label=label, http=client_http,
    )  # fmt: skip

    async def on_findings(sid: str, findings: list[dict[str, Any]]) -> None:
        with session_scope(engine) as db:
            record_findings(db, sid, findings, redactor=redactor, source="live")

    async def on_abort(root: str, detector: str) -> None:
        aborted[root] = detector

    async def on_live(rows: list[LiveRow]) -> None:
        with session_scope(engine) as db:
            stored = store_live_rows(db, rows, redactor=redactor)
        if on_change is not None:
            now = utcnow()
            for r, x in zip(rows, stored.rows, strict=True):
                if r.state != r.previous_state:
                    on_change(live_change(x, r.previous_state, now))

    async def on_messages(batch: MessageBatch) -> None:
        with session_scope(engine) as db:
            store_live_messages(db, server, batch, redactor=redactor)

    async def on_forget(session_ids: list[str]) -> None:
        with session_scope(engine) as db:
            forget_live(db, server, session_ids)

    def make(cfg: WatchConfig) -> Watcher:
        return Watcher(OpenCodeClient(client_http, url), client_http, on_archive, config=cfg,
                       on_rescue=on_rescue, on_findings=on_findings, on_abort=on_abort, on_live=on_live,
                       on_forget=on_forget, on_messages=on_messages, log=log)  # fmt: skip

    async def run(w: Watcher, term: asyncio.Event) -> None:
        terms.append(w)
        todo = [act_loop(w, r, term, engine=engine, redactor=redactor, holder=holder, log=log)
                for r in ([rules] if rules is not None and rules.any else [])]  # fmt: skip
        await asyncio.gather(w.run(term), *todo)

    holder, terms = holder_name(), list[Watcher]()
    server = OpenCodeClient(client_http, url).base_url
    cfg = with_mirror(config or WatchConfig(), settings.data_dir, settings.mirror_budget_bytes, url)
    try:
        if lease_seconds is None:
            await run(make(cfg), stop)
        else:
            await follow(make, cfg, stop, engine=engine, server=server, lease_seconds=lease_seconds,
                         holder=holder, run=run, log=log)  # fmt: skip
    finally:
        if own_http:
            await client_http.aclose()
    return terms[-1] if terms else make(cfg)


async def watch_servers(
    settings: Settings,
    stop: asyncio.Event,
    urls: Sequence[str],
    *,
    engine: Engine,
    **kw: Any,
) -> list[Watcher]:
    """``watch_server`` for each URL at once, until ``stop`` is set; one server's trouble never
    stops the others (its rows turn ``unknown``)."""
    return list(
        await asyncio.gather(*(watch_server(settings, stop, engine=engine, server_url=u, **kw) for u in urls))
    )
