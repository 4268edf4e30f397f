"""What `octel watch` adds around each server's `Watcher`: the opt-in rules that act on live
sessions (audited), and the lease that lets several watchers share one store with one of them
following each server.

`act_loop` runs beside a watcher: every tick it asks `tower.actions.decide` what the rules
want from the live board, carries each intent out after re-checking it (`tower.act`), and
writes an audit row for every one, done or skipped. It acts only while the lease is held.

`follow` holds the lease of a server and runs one watcher term while it does: it renews the
lease every third of its period, and stops following (without acting any more) once it could
not renew for two thirds of it, before any other watcher may take over. A watcher that takes
over from one that died archives the trees that changed since the store's archive of them
(the others it marks archived), so a tree already archived as it is now is not archived again,
and none that finished in the gap is lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
import uuid
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from archiver.errors import FetchError
from archiver.redact import Redactor
from detectors import REGISTRY
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc, parse_duration
from telemetry.tower.actions import record_action
from telemetry.tower.budget_watch import BudgetWatch
from telemetry.tower.lease import Claim, claim_lease, release_lease, renew_lease
from tower.act import Carried, carry_out, views_of
from tower.actions import Intent, Rules, SessionView, decide, parse_on_stuck
from tower.alert import AlertSink, NullSink
from tower.live_alerts import LiveAlerts
from tower.watch import WatchConfig, Watcher

__all__ = ["act_loop", "follow", "holder_name", "rules_from"]

Log = Callable[[str], None]


def rules_from(
    settings: Settings,
    *,
    deny_asks_after: str | None = None,
    abort_retries_after: int | None = None,
    on_stuck: Sequence[str] = (),
) -> Rules:
    """The rules of `octel watch`: flags over settings; ValueError with one sentence for a bad
    duration, item or detector name."""
    deny = settings.deny_asks_after if deny_asks_after is None else deny_asks_after.strip()
    pairs = parse_on_stuck(list(on_stuck) if on_stuck else [settings.on_stuck])
    known = REGISTRY.names()
    for det, _ in pairs:
        if det not in known:
            raise ValueError(f"--on-stuck: no detector {det!r}; known: {', '.join(known)}")
    retries = settings.abort_retries_after if abort_retries_after is None else abort_retries_after
    try:
        after = parse_duration(deny).total_seconds() if deny else None
    except ValueError as exc:
        raise ValueError(f"--deny-asks-after: {exc}") from None
    return Rules(deny_asks_after=after, abort_retries_after=retries, on_stuck=pairs)


def holder_name() -> str:
    """This watcher process, as a lease names it: host, pid and a random tail."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)


async def act_loop(
    watcher: Watcher,
    rules: Rules,
    stop: asyncio.Event,
    *,
    engine: Engine,
    redactor: Redactor,
    holder: str | None = None,
    log: Log = lambda _m: None,
    tick: float = 1.0,
    clock: Callable[[], float] = time.time,
    budgets: BudgetWatch | None = None,
    sink: AlertSink | None = None,
    alerts_to: str = "",
) -> int:
    """Until ``stop``: carry out what the rules and the budgets decide, and emit the rules'
    alerts to ``sink`` (``alerts_to`` names its channels for the audit row); returns how many
    intents were handled."""
    done: set[str] = set()
    handled = 0
    server = watcher.client.base_url
    sink = sink or NullSink()
    alerts = LiveAlerts(rules, redactor.redact_str)
    while not stop.is_set():
        now = clock()
        views = views_of(watcher.live, now, findings=bool(rules.on_stuck), root_of=watcher.rec.root_of)
        for a in alerts.tick(views):
            sink.emit(a)
        intents = decide(views, rules, now, done)
        if budgets is not None and budgets.any:
            intents += _budget_intents(watcher, budgets, engine, views, now, done, intents, log)
        for it in intents:
            if stop.is_set():
                break
            done.add(it.key)  # once, whatever the outcome: a failing action is not hammered
            c = watcher.client
            got = await carry_out(watcher.http, server, watcher.live, it, v2=c.is_v2, auth=c.http.auth)
            res = _noticed(got, alerts_to)
            if (alert := alerts.carried(res, watcher.rec.root_of(it.session_id))) is not None:
                sink.emit(alert)
            handled += 1
            log(f"{it.rule} {it.kind} {it.session_id}: {res.outcome} ({res.detail})")
            try:
                with session_scope(engine) as db:
                    root = watcher.rec.root_of(it.session_id)
                    record_action(
                        db, server, res, redactor=redactor, at=clock(), root_session_id=root, watcher=holder
                    )
            except SQLAlchemyError as exc:
                log(f"audit row of {it.rule} on {it.session_id} not stored: {exc}")
        await _pause(stop, tick)
    return handled


def _budget_intents(
    watcher: Watcher,
    budgets: BudgetWatch,
    engine: Engine,
    views: list[SessionView],
    now: float,
    done: set[str],
    decided: list[Intent],
    log: Log,
) -> list[Intent]:
    """The budgets' intents of this tick (none when the store cannot be read: the next tick
    tries again), less those another rule already decided."""
    try:
        got = budgets.check(
            engine, now, watcher.live, watcher.rec.root_of, (v.root_session_id or v.session_id for v in views)
        )
    except SQLAlchemyError as exc:
        log(f"budgets not checked (store: {type(exc).__name__}); trying again")
        return []
    taken = {i.key for i in decided}
    return [i for i in budgets.intents(views, got, done, now) if i.key not in taken]


def _noticed(res: Carried, alerts_to: str) -> Carried:
    """A notice says where its alert went: the stuck alert is queued for the channels."""
    if res.outcome != "notified":
        return res
    det = res.intent.evidence.get("detector")
    if not alerts_to:
        return replace(res, detail="logged and recorded; no alert channel is configured, nothing sent")
    key = f"stuck:{res.intent.session_id}:{det}"
    return replace(res, detail=f"alert {key} queued for delivery to {alerts_to} (octel alerts list)")


async def _seed_takeover(
    watcher: Watcher, engine: Engine, claim: Claim, now: float, log: Log, *, existing: bool = False
) -> None:
    """A takeover: a tree whose every session the store holds as the server has it now counts
    as archived; so does a tree no archive holds that was quiet since before the previous
    watcher began (it was there before, not ours to archive), unless ``existing`` (the user
    asked for trees already there). Any other tree is archived once quiet: it changed after
    its archive, or finished while nobody followed the server, even when this watcher, standing
    by, had counted it as already there."""
    try:
        listed = await watcher.client.list_sessions()
    except FetchError as exc:
        log(f"takeover: sessions not listed ({exc}); archiving every tree that changes")
        listed = []
    mirrored = _mirrored_deleted(watcher)
    parent: dict[str, object] = {s["id"]: s.get("parentID") for s in listed if isinstance(s.get("id"), str)}
    stored = _stored_updates(engine, sorted(set(parent) | set(mirrored)))
    began = claim.previous_start.timestamp() * 1000 if claim.previous_start else float("-inf")
    latest: dict[str, float] = {}
    changed: set[str] = set()
    for s in listed:
        sid, updated = s.get("id"), (s.get("time") or {}).get("updated")
        if not isinstance(sid, str) or not isinstance(updated, int | float):
            continue
        root, hops = sid, 0
        while isinstance(up := parent.get(root), str) and hops < 100:
            root, hops = up, hops + 1
        latest[root] = max(latest.get(root, updated), updated)
        have = stored.get(sid)
        if have is None or updated > have + 1:  # not archived, or changed since (1 ms: float rounding)
            changed.add(root)
    for root, last in latest.items():
        if root not in changed or (not existing and root not in stored and last < began):
            watcher.rec.mark_archived(root, now)
            watcher.mirror.archived(root, now)
        else:  # due once quiet, whatever a standing-by watcher's first look counted it as
            watcher.rec.archived.pop(root, None)
            watcher.mirror.archived_at.pop(root, None)
    for root, updated in mirrored.items():  # deleted meanwhile: rescued unless archived as it was
        have = stored.get(root)
        if have is not None and updated is not None and updated <= have + 1:
            watcher.mirror.archived(root, now)
    watcher._resync = True  # the next step reads the server's list again


def _mirrored_deleted(watcher: Watcher) -> dict[str, float | None]:
    """Roots of trees deleted while standing by, with their newest update as the mirror saw it."""
    out: dict[str, float | None] = {}
    for sid in watcher.mirror.deleted_at:
        root = watcher.mirror.root_of(sid)
        s = watcher.mirror.session(root)
        rec = s.record() if s is not None else None
        u = (rec.get("time") or {}).get("updated") if rec else None
        out[root] = float(u) if isinstance(u, int | float) else None
    return out


def _stored_updates(engine: Engine, ids: list[str]) -> dict[str, float | None]:
    stored: dict[str, float | None] = {}
    with session_scope(engine, write=False) as db:
        for i in range(0, len(ids), 500):
            q = select(SessionIndex.session_id, SessionIndex.updated_at)
            for got, u in db.exec(q.where(col(SessionIndex.session_id).in_(ids[i : i + 500]))).all():
                stored[got] = as_utc(u).timestamp() * 1000 if u else None
    return stored


async def follow(
    make: Callable[[WatchConfig], Watcher],
    config: WatchConfig,
    stop: asyncio.Event,
    *,
    engine: Engine,
    server: str,
    lease_seconds: float,
    holder: str,
    run: Callable[[Watcher, asyncio.Event], Coroutine[Any, Any, None]],
    log: Log = lambda _m: None,
) -> Watcher | None:
    """Follow ``server`` whenever this watcher holds its lease, until ``stop``; returns the
    last watcher that ran. While another holds it, a watcher stands by: it reads the server's
    events into its mirror from the first second (``Watcher.following`` False), and the term
    that begins when the lease runs out goes on with that watcher."""
    last: Watcher | None = None
    waiting_on: str | None = None
    step = lease_seconds / 3
    standby: tuple[Watcher, asyncio.Event, asyncio.Task[None]] | None = None
    try:
        while not stop.is_set():
            try:
                with session_scope(engine) as db:
                    claim: Claim = claim_lease(db, server, holder, lease_seconds)
            except SQLAlchemyError as exc:
                log(f"lease of {server} not claimed (store: {type(exc).__name__}); trying again")
                await _pause(stop, step)
                continue
            if not claim.held:
                if waiting_on != claim.holder:
                    log(f"{server} is followed by {claim.holder}; standing by to take over")
                    waiting_on = claim.holder
                if standby is None or standby[2].done():
                    standby = _stand_by(make(config))
                await _pause(stop, min(step, claim.expires_in + 0.05))  # claim the moment it runs out
                continue
            waiting_on = None
            cfg = config
            if claim.taken_from is not None:
                log(f"took {server} over from {claim.taken_from}, whose lease ran out")
                cfg = replace(config, archive_existing=True)
            if standby is not None and not standby[2].done():
                watcher = last = standby[0]
                watcher.cfg = replace(watcher.cfg, archive_existing=cfg.archive_existing)
            else:
                watcher = last = make(cfg)
            if claim.taken_from is not None:
                existing = config.archive_existing
                await _seed_takeover(watcher, engine, claim, time.time(), log, existing=existing)
            watcher.following = True
            await _term(
                watcher,
                run,
                stop,
                engine=engine,
                server=server,
                holder=holder,
                lease_seconds=lease_seconds,
                log=log,
            )
            watcher.following = False  # lost the lease: back to standing by, if still watching
            await _pause(stop, 0.5)  # a term that ended by itself is not restarted in a tight loop
    finally:
        if standby is not None:
            standby[1].set()
            with contextlib.suppress(Exception):
                await standby[2]
    with contextlib.suppress(SQLAlchemyError), session_scope(engine) as db:
        release_lease(db, server, holder)
    return last


def _stand_by(watcher: Watcher) -> tuple[Watcher, asyncio.Event, asyncio.Task[None]]:
    """Start ``watcher`` watching without following; stopped by setting the event."""
    watcher.following = False
    halt = asyncio.Event()
    return watcher, halt, asyncio.create_task(watcher.run(halt))


async def _term(
    watcher: Watcher,
    run: Callable[[Watcher, asyncio.Event], Coroutine[Any, Any, None]],
    stop: asyncio.Event,
    *,
    engine: Engine,
    server: str,
    holder: str,
    lease_seconds: float,
    log: Log,
) -> None:
    """One term of following: run the watcher while the lease is renewed."""
    term = asyncio.Event()
    task = asyncio.create_task(run(watcher, term))
    renewed = time.monotonic()
    try:
        while not stop.is_set() and not task.done():
            await _pause(stop, lease_seconds / 3)
            if stop.is_set():
                break
            try:
                with session_scope(engine) as db:
                    ok = renew_lease(db, server, holder, lease_seconds)
            except SQLAlchemyError as exc:
                if time.monotonic() - renewed > lease_seconds * 2 / 3:
                    log(f"lease of {server} not renewed ({type(exc).__name__}); stopping to follow it")
                    return
                continue
            if not ok:
                log(f"lease of {server} was taken by another watcher; stopping to follow it")
                return
            renewed = time.monotonic()
    finally:
        term.set()
        with contextlib.suppress(Exception):
            await task
