"""What `octel watch` adds around each server's `Watcher`: the opt-in rules that act on live
sessions (audited), and the lease that lets several watchers share one store with one of them
following each server.

`act_loop` (`telemetry.tower.acting`) runs beside a watcher, and only while the lease is held.

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
from typing import Any, NamedTuple

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from archiver.errors import FetchError
from archiver.redact import Redactor
from archiver.shape import RawJson
from detectors import REGISTRY
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc, parse_duration
from telemetry.tower.acting import act_loop
from telemetry.tower.acting import pause as _pause
from telemetry.tower.lease import Claim, claim_lease, release_lease, renew_lease
from telemetry.tower.takeover_lost import record_unseen, unseen_trees
from tower.actions import Rules, parse_on_stuck
from tower.seen import dead_journal, read_journal
from tower.watch import WatchConfig, Watcher

__all__ = ["act_loop", "follow", "holder_name", "rules_from"]  # act_loop: telemetry.tower.acting

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


class Listed(NamedTuple):
    """What a takeover reads of a session the server lists."""

    id: str
    parent: str | None  # parentID: a child's parent
    updated: float | None  # time.updated, ms since the epoch


def _listed(sessions: Sequence[RawJson]) -> list[Listed]:
    """The listed sessions that have an id; a field of another type reads as absent."""
    out: list[Listed] = []
    for s in sessions:
        sid, parent, t = s.get("id"), s.get("parentID"), s.get("time")
        u = t.get("updated") if isinstance(t, dict) else None
        if isinstance(sid, str):
            up = parent if isinstance(parent, str) else None
            out.append(Listed(sid, up, u if isinstance(u, int | float) else None))
    return out


async def _seed_takeover(
    watcher: Watcher, engine: Engine, claim: Claim, now: float, log: Log, *, existing: bool = False
) -> list[Listed] | None:
    """A takeover: a tree whose every session the store holds as the server has it now counts
    as archived; so does a tree no archive holds that was quiet since before the previous
    watcher began (it was there before, not ours to archive), unless ``existing`` (the user
    asked for trees already there). Any other tree is archived once quiet: it changed after
    its archive, or finished while nobody followed the server, even when this watcher, standing
    by, had counted it as already there. Returns the server's sessions (None: not listed)."""
    got: list[Listed] | None = None
    try:
        listed = got = _listed(await watcher.client.list_sessions())
    except FetchError as exc:
        log(f"takeover: sessions not listed ({exc}); archiving every tree that changes")
        listed = []
    mirrored = _mirrored_deleted(watcher)
    parent = {s.id: s.parent for s in listed}
    stored = _stored_updates(engine, sorted(set(parent) | set(mirrored)))
    began = claim.previous_start.timestamp() * 1000 if claim.previous_start else float("-inf")
    latest: dict[str, float] = {}
    changed: set[str] = set()
    for sid, _, updated in listed:
        if updated is None:
            continue
        root, hops = sid, 0
        while (up := parent.get(root)) is not None and hops < 100:
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
    return got


async def _unseen(
    watcher: Watcher, engine: Engine, claim: Claim, listed: list[Listed], redactor: Redactor, log: Log
) -> None:
    """Record lost each tree only the dead holder's live rows name, once the server says 404
    (``telemetry.tower.takeover_lost``)."""
    m = watcher.mirror
    known = {s.id for s in listed} | set(m.parents) | set(m.live) | m.spilled
    known |= set(watcher.rec.parents)
    server = watcher.client.base_url
    journal = read_journal(path) if (path := dead_journal(watcher.cfg.mirror_dir, claim.taken_from)) else {}
    try:
        named = {k for k in known if isinstance(k, str)}
        trees = unseen_trees(engine, server, named, claim.previous_start, journal)
    except SQLAlchemyError as exc:
        log(f"takeover: live rows not read ({type(exc).__name__}); trees deleted meanwhile not checked")
        return
    gone = {}
    for root, sids in trees.items():
        try:
            await watcher.client.session(root)
        except FetchError as exc:
            if exc.error_kind == "not_found":
                gone[root] = sids
    if gone:
        try:
            record_unseen(engine, server, gone, redactor=redactor, log=log)
        except SQLAlchemyError as exc:
            log(f"takeover: {len(gone)} trees deleted meanwhile not recorded lost ({type(exc).__name__})")


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
    redactor: Redactor | None = None,
) -> Watcher | None:
    """Follow ``server`` whenever this watcher holds its lease, until ``stop``; returns the
    last watcher that ran. While another holds it, a watcher stands by: it reads the server's
    events into its mirror from the first second (``Watcher.following`` False), and the term
    that begins when the lease runs out goes on with that watcher. With ``redactor``, a takeover
    records lost the trees the dead holder followed that the server deleted meanwhile."""
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
                listed = await _seed_takeover(watcher, engine, claim, time.time(), log, existing=existing)
                if listed is not None and redactor is not None:  # trees deleted while nobody followed
                    await _unseen(watcher, engine, claim, listed, redactor, log)
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
