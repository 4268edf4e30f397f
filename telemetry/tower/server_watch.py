"""Follow OpenCode servers into the store (`octel watch`): ``watch_server`` wires one server's
``tower.watch.Watcher`` to the store (live rows, live findings, archives of each tree that
goes quiet, the rescue of a deleted tree from the mirror, the opt-in rules and the lease of
``telemetry.tower.watching``); ``watch_servers`` runs one per server. Dispatchers import both from
``telemetry.archiving``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.client import OpenCodeClient
from archiver.recorder import PermissionHistory, StatusHistory
from detectors.findings import FindingDict
from telemetry.archive_store import archive_store
from telemetry.queries.live import LiveChange, live_change
from telemetry.services.index.indexing import record_findings
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex
from telemetry.timeutil import utcnow
from telemetry.tower.budget_watch import BudgetWatch
from telemetry.tower.janitor import janitor_loop
from telemetry.tower.live import forget_live, store_live_rows
from telemetry.tower.live_messages import store_live_messages
from telemetry.tower.lost import archive_from_mirror, root_gone, with_mirror
from telemetry.tower.watching import act_loop, follow, holder_name
from telemetry.tree_archiving import (
    ArchiveOutcome,
    archive_session_tree,
    archive_session_tree_async,
    opencode_client,
)
from tower.actions import Rules
from tower.alert import AlertSink
from tower.live_board import LiveRow
from tower.live_messages import MessageBatch
from tower.watch import WatchConfig, Watcher

__all__ = ["watch_server", "watch_servers"]


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
    delete_archived_after: float | None = None,
    janitor_every: float = 600.0,
    budgets: BudgetWatch | None = None,
    sink: AlertSink | None = None,
    alerts_to: str = "",
) -> Watcher:
    """Follow one OpenCode server until ``stop`` is set: keep its live rows, archive and index
    each root tree when it goes quiet (and again after it changes), store live findings, abort
    when configured. ``on_change`` hears every row whose state changed; ``rules`` act on live
    sessions (audited), ``budgets`` stop trees over their limits (audited, alerts raised);
    with ``lease_seconds``, follow only while this process holds the server's lease in the
    store (`telemetry.tower.watching`); with ``delete_archived_after`` (seconds), delete the
    trees archived, verified and idle that long, every ``janitor_every`` seconds while following
    (`telemetry.tower.janitor`); the rules' alerts go to ``sink`` (`telemetry.alerting`;
    ``alerts_to`` names its channels)."""
    url = server_url or settings.opencode_url
    aborted: dict[str, str] = {}
    own_http = http is None
    client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0))

    async def archive(root: str, **kw: Any) -> ArchiveOutcome:
        """One archive, in a thread of its own: its work (reading the tree, redacting, writing,
        reading back, indexing) would stop the event stream for as long, and a watcher killed
        meanwhile would lose the sessions it had not read yet. A client handed in belongs to the
        caller's loop: then in this one."""
        if not own_http:
            return await archive_session_tree_async(root, http=client_http, **kw)
        return await asyncio.to_thread(archive_session_tree, root, **kw)

    async def on_archive(root: str, status: StatusHistory, perms: PermissionHistory) -> bool:
        out = await archive(
            root,
            settings=settings,
            engine=engine,
            server_url=url,
            label=label,
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
            await on_rescue(root, watcher.mirror_snapshot(root), status, perms)
            return False
        log(
            f"archived {root}: {res.sessions_found if res else 0} sessions, "
            f"{'complete' if out.ok else 'with errors'}"
        )
        return out.ok

    redactor = redactor_for(settings)
    on_rescue = functools.partial(
        archive_from_mirror,
        archive=archive,
        engine=engine,
        redactor=redactor,
        server=url,
        log=log,
        settings=settings,
        server_url=url,
        label=label,
    )

    async def on_findings(sid: str, findings: list[FindingDict]) -> None:
        with session_scope(engine) as db:
            record_findings(db, sid, findings, redactor=redactor, source="live")

    async def on_abort(root: str, detector: str) -> None:
        aborted[root] = detector

    def store_rows(rows: list[LiveRow]) -> list[LiveSession]:
        with session_scope(engine) as db:
            return store_live_rows(db, rows, redactor=redactor).rows

    def store_messages(batch: MessageBatch) -> None:
        with session_scope(engine) as db:
            store_live_messages(db, server, batch, redactor=redactor)

    # the store's writes wait in a thread, not on the loop: SQLite lets one writer at a time
    # (an archive's transaction may hold it for a second) and the event stream reads on
    async def on_live(rows: list[LiveRow]) -> None:
        stored = await asyncio.to_thread(store_rows, rows)
        if on_change is not None:
            now = utcnow()
            for r, x in zip(rows, stored, strict=True):
                if r.state != r.previous_state:
                    on_change(live_change(x, r.previous_state, now))

    async def on_messages(batch: MessageBatch) -> None:
        await asyncio.to_thread(store_messages, batch)

    async def on_forget(session_ids: list[str]) -> None:
        with session_scope(engine) as db:
            forget_live(db, server, session_ids)

    def make(cfg: WatchConfig) -> Watcher:
        return Watcher(
            opencode_client(client_http, url, settings),
            client_http,
            on_archive,
            config=cfg,
            on_rescue=on_rescue,
            on_findings=on_findings,
            on_abort=on_abort,
            on_live=on_live,
            on_forget=on_forget,
            on_messages=on_messages,
            log=log,
        )

    async def run(w: Watcher, term: asyncio.Event) -> None:
        terms.append(w)
        acting = (rules is not None and rules.any) or (budgets is not None and budgets.any)
        todo = [
            act_loop(
                w,
                rules or Rules(),
                term,
                engine=engine,
                redactor=redactor,
                holder=holder,
                log=log,
                budgets=budgets,
                sink=sink,
                alerts_to=alerts_to,
                resolve_on=stop,  # the watcher stopping, not a lease lost: resolve what fires
            )
            for _ in range(acting)
        ]
        if delete_archived_after is not None:
            todo.append(
                janitor_loop(
                    opencode_client(client_http, url, settings),
                    term,
                    engine=engine,
                    store=functools.partial(archive_store, settings, engine),
                    older_than_s=delete_archived_after,
                    redactor=redactor,
                    every=janitor_every,
                    watcher=holder,
                    log=log,
                )
            )
        # a watcher that stood by runs already: the term only lets it follow until it ends
        await asyncio.gather(term.wait() if w.running else w.run(term), *todo)

    holder, terms = holder_name(), list[Watcher]()
    server = OpenCodeClient(client_http, url).base_url
    cfg = with_mirror(config or WatchConfig(), settings.data_dir, settings.mirror_budget_bytes, url)
    cfg = dataclasses.replace(cfg, max_event_bytes=settings.watch_max_event_bytes)
    try:
        if lease_seconds is None:
            await run(make(cfg), stop)
        else:
            await follow(
                make,
                cfg,
                stop,
                engine=engine,
                server=server,
                lease_seconds=lease_seconds,
                holder=holder,
                run=run,
                log=log,
                redactor=redactor,
            )
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
