"""The opt-in rules of `octel watch` acting on a live server, audited so that what a watcher
did outlives it.

`act_loop` runs beside a watcher while it holds the server's lease: every tick it asks
`tower.actions.decide` what the rules want from the live board, reads the audit of those
intents (`tower.actions.screen`: one on record is never acted on again, whoever recorded it),
re-checks each with the server (`tower.act.recheck`), writes it to the audit as ``sending``
before the request leaves, and writes the outcome on the same row after. A row another
watcher left ``sending`` (killed between its request and the answer) is reported ``unknown``
with what the server shows now, and never sent again: the request may have reached the server.

With budgets, a session's spend growing on the watcher's board wakes the loop (at most every
``_WAKE_GAP``): a turn that takes a tree past its limit is checked, re-checked and aborted in
the tick its cost arrives, not up to a tick later, while the next turn is still in flight. The
intents of different sessions are carried out at once, so aborting a fleet over its day's
budget does not wait on each abort's answer in turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from archiver.redact import Redactor
from telemetry.store.db import session_scope
from telemetry.tower.actions import (
    audit_of,
    claim_action,
    left_sending,
    mark_unknown,
    record_action,
    settle_action,
)
from telemetry.tower.budget_watch import BudgetWatch
from tower.act import Carried, recheck, request_of, send, server_now, views_of
from tower.actions import Intent, Rules, SessionView, decide, screen
from tower.alert import AlertSink, NullSink
from tower.live_alerts import LiveAlerts
from tower.watch import Watcher

__all__ = ["act_loop", "pause"]

Log = Callable[[str], None]
# the least time between two ticks when spend wakes the loop (a burst of turns costs one read)
_WAKE_GAP = 0.1


async def pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait ``seconds``, or less when ``stop`` is set first."""
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
    resolve_on: asyncio.Event | None = None,
) -> int:
    """Until ``stop``: carry out what the rules and the budgets decide, and emit the rules'
    alerts to ``sink`` (``alerts_to`` names its channels for the audit row); returns how many
    intents were handled. The audit is read before acting and written before each request: an
    intent on record is never sent again, by this watcher or one taking over from it. When
    ``resolve_on`` is set as the loop ends (the watcher stops; not a lease lost to another
    watcher, which goes on looking), the rules' alerts still firing are sent resolved."""
    done: set[str] = set()
    handled = 0
    server = watcher.client.base_url
    swept = False
    sink = sink or NullSink()
    alerts = LiveAlerts(rules, redactor.redact_str)
    wake = asyncio.Event()
    if budgets is not None and budgets.budgets:  # a turn's cost is checked when it arrives
        watcher.live.on_spend = wake.set
    ticks, full, last_full = 0, True, 0.0
    try:
        while not stop.is_set():
            ticks += 1
            began = time.monotonic()
            last_full = began if full else last_full
            try:
                if not swept:  # once a term: rows the previous holder left mid-request
                    await _report_left_sending(watcher, engine, server, holder, log)
                    swept = True
                handled += await _tick(
                    watcher,
                    rules,
                    stop,
                    budgets,
                    alerts,
                    sink,
                    done,
                    ticks,
                    clock,
                    log,
                    engine=engine,
                    redactor=redactor,
                    holder=holder,
                    alerts_to=alerts_to,
                    full=full,
                )
            except SQLAlchemyError as exc:  # no audit, no action: tried again next tick
                log(f"actions paused: the audit could not be read or written ({type(exc).__name__})")
            # the full ticks keep their pace whatever woke the loop between them
            woken = await _pause_or_wake(stop, wake, max(0.0, last_full + tick - time.monotonic()))
            full = not woken or time.monotonic() - last_full >= tick
            if (gap := _WAKE_GAP - (time.monotonic() - began)) > 0 and not stop.is_set():
                await pause(stop, gap)  # a burst of spend is checked at most every _WAKE_GAP
    finally:
        if watcher.live.on_spend == wake.set:
            watcher.live.on_spend = None
        if resolve_on is not None and resolve_on.is_set():
            for a in alerts.stopped():
                sink.emit(a)
    return handled


async def _pause_or_wake(stop: asyncio.Event, wake: asyncio.Event, seconds: float) -> bool:
    """Wait ``seconds``, or less when ``stop`` or ``wake`` is set first; whether ``wake`` was
    (it is cleared)."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(wake.wait())]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
        woken = wake.is_set()
        wake.clear()
    return woken


async def _tick(
    watcher: Watcher,
    rules: Rules,
    stop: asyncio.Event,
    budgets: BudgetWatch | None,
    alerts: LiveAlerts,
    sink: AlertSink,
    done: set[str],
    tick: int,
    clock: Callable[[], float],
    log: Log,
    *,
    full: bool = True,
    **kw: Any,
) -> int:
    """One tick: decide, screen against the audit, act; how many intents were handled. The
    intents of different sessions are carried out at once (an abort's answer can take a second:
    OpenCode answers once the run stopped), each session's in turn. A tick that spend woke
    before the full tick was due (not ``full``) checks the budgets alone: the other rules, and
    the detectors their findings cost, keep to the tick."""
    engine: Engine = kw["engine"]
    server = watcher.client.base_url
    now = clock()
    views = views_of(watcher.live, now, findings=full and bool(rules.on_stuck), root_of=watcher.rec.root_of)
    due: list[Intent] = []
    if full:
        for a in alerts.tick(views):
            sink.emit(a)
        due = decide(views, rules, now, done)
    if budgets is not None and budgets.any:
        due += _budget_intents(watcher, budgets, engine, views, now, done, due, log, tick)
    if not due:
        return 0
    with session_scope(engine, write=False) as db:
        audit = audit_of(db, server, [it.key for it in due])
    act, orphans = screen(due, audit, kw["holder"])
    for it in due:
        if it not in act:  # on record, whoever wrote it: never again
            done.add(it.key)
            got = audit[it.key].outcome
            log(f"{it.rule} {it.kind} {it.session_id}: on record already ({got}); not sent again")
    if orphans:
        await _report_left_sending(watcher, engine, server, kw["holder"], log)
    per_session: dict[str, list[Intent]] = {}
    for it in act:
        done.add(it.key)  # once, whatever the outcome: a failing action is not hammered
        per_session.setdefault(it.session_id, []).append(it)

    async def in_turn(todo: list[Intent]) -> int:
        n = 0
        for it in todo:
            if stop.is_set():
                break
            if it.rule == "budget":  # the audit row says which tick acted on the breach
                it = replace(it, evidence={**it.evidence, "acted_tick": tick})
            res = await _act(watcher, it, log=log, clock=clock, **kw)
            if res is not None and (alert := alerts.carried(res, watcher.rec.root_of(it.session_id))):
                sink.emit(alert)
            n += 1
        return n

    counts = await asyncio.gather(*(in_turn(t) for t in per_session.values()), return_exceptions=True)
    for c in counts:
        if isinstance(c, BaseException):
            raise c
    return sum(n for n in counts if isinstance(n, int))


async def _act(
    watcher: Watcher,
    it: Intent,
    *,
    engine: Engine,
    redactor: Redactor,
    holder: str | None,
    log: Log,
    clock: Callable[[], float],
    alerts_to: str = "",
) -> Carried | None:
    """Re-check one intent, write it to the audit, send it, write its outcome; what came of it
    (None when another watcher had it on record first)."""
    server = watcher.client.base_url
    root = watcher.rec.root_of(it.session_id)
    c = watcher.client
    v2, auth = c.is_v2, c.http.auth
    res = await recheck(watcher.http, server, watcher.live, it, v2=v2, auth=auth)
    if res is not None:  # nothing to send: one row with the outcome
        res = _noticed(res, alerts_to)
        log(f"{it.rule} {it.kind} {it.session_id}: {res.outcome} ({res.detail})")
        with session_scope(engine) as db:
            record_action(
                db, server, res, redactor=redactor, at=clock(), root_session_id=root, watcher=holder
            )
        return res
    sending = Carried(it, "sending", f"{request_of(it, v2)}: sent, no answer recorded yet")
    with session_scope(engine) as db:
        row_id = claim_action(
            db, server, sending, redactor=redactor, at=clock(), root_session_id=root, watcher=holder
        )
    if row_id is None:
        log(f"{it.rule} {it.kind} {it.session_id}: already on record; not sent")
        return None
    res = await send(watcher.http, server, it, v2=v2, auth=auth)
    log(f"{it.rule} {it.kind} {it.session_id}: {res.outcome} ({res.detail})")
    try:
        with session_scope(engine) as db:
            settle_action(db, row_id, res, redactor=redactor)
    except SQLAlchemyError as exc:  # the row stays "sending": reported unknown by the next holder
        log(f"outcome of {it.rule} on {it.session_id} not stored: {exc}")
    return res


async def _report_left_sending(
    watcher: Watcher, engine: Engine, server: str, holder: str | None, log: Log
) -> None:
    """Rows another watcher left ``sending`` become ``unknown``, with what the server shows now
    (asked again, nothing sent: the request may have reached it)."""
    with session_scope(engine, write=False) as db:
        rows = left_sending(db, server, holder)
    for r in rows:
        ev = r.evidence or {}
        rid = ev.get("request_id") if isinstance(ev.get("request_id"), str) else None
        kind = "reject_ask" if r.action == "reject_ask" else "abort"
        it = Intent(r.rule, kind, r.session_id, r.intent_key or "", ev, rid)  # type: ignore[arg-type]
        c = watcher.client
        now = await server_now(watcher.http, server, it, v2=c.is_v2, auth=c.http.auth)
        with session_scope(engine) as db:
            mark_unknown(db, r.id or 0, now)
        log(f"{r.rule} {r.action} {r.session_id}: unknown (watcher {r.watcher} died while sending); {now}")


def _budget_intents(
    watcher: Watcher,
    budgets: BudgetWatch,
    engine: Engine,
    views: list[SessionView],
    now: float,
    done: set[str],
    decided: list[Intent],
    log: Log,
    tick: int = 0,
) -> list[Intent]:
    """The budgets' intents of this tick (none when the store cannot be read: the next tick
    tries again), less those another rule already decided."""
    try:
        got = budgets.check(
            engine,
            now,
            watcher.live,
            watcher.rec.root_of,
            (v.root_session_id or v.session_id for v in views),
            tick=tick,
        )
    except SQLAlchemyError as exc:
        log(f"budgets not checked (store: {type(exc).__name__}); trying again")
        return []
    taken = {i.key for i in decided}
    return [i for i in budgets.intents(views, got, done, now, tick=tick) if i.key not in taken]


def _noticed(res: Carried, alerts_to: str) -> Carried:
    """A notice says where its alert went: the stuck alert is queued for the channels."""
    if res.outcome != "notified":
        return res
    det = res.intent.evidence.get("detector")
    if not alerts_to:
        return replace(res, detail="logged and recorded; no alert channel is configured, nothing sent")
    key = f"stuck:{res.intent.session_id}:{det}"
    return replace(res, detail=f"alert {key} queued for delivery to {alerts_to} (octel alerts list)")
