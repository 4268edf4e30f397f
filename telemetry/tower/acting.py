"""The opt-in rules of `octel watch` acting on a live server, audited so that what a watcher
did outlives it.

`act_loop` runs beside a watcher while it holds the server's lease: every tick it asks
`tower.actions.decide` what the rules want from the live board, reads the audit of those
intents (`tower.actions.screen`: one on record is never acted on again, whoever recorded it),
re-checks each with the server (`tower.act.recheck`), writes it to the audit as ``sending``
before the request leaves, and writes the outcome on the same row after. A row another
watcher left ``sending`` (killed between its request and the answer) is reported ``unknown``
with what the server shows now, and never sent again: the request may have reached the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

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
from tower.act import Carried, recheck, request_of, send, server_now, views_of
from tower.actions import Intent, Rules, decide, screen
from tower.watch import Watcher

__all__ = ["act_loop"]

Log = Callable[[str], None]


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
) -> int:
    """Until ``stop``: carry out what the rules decide; returns how many intents were handled.
    The audit is read before acting and written before each request: an intent on record is
    never sent again, by this watcher or one taking over from it."""
    done: set[str] = set()
    handled = 0
    server = watcher.client.base_url
    swept = False
    while not stop.is_set():
        try:
            if not swept:  # once a term: rows the previous holder left mid-request
                await _report_left_sending(watcher, engine, server, holder, log)
                swept = True
            now = clock()
            views = views_of(watcher.live, now, findings=bool(rules.on_stuck), root_of=watcher.rec.root_of)
            due = decide(views, rules, now, done)
            if due:
                with session_scope(engine, write=False) as db:
                    audit = audit_of(db, server, [it.key for it in due])
                act, orphans = screen(due, audit, holder)
                for it in due:
                    if it not in act:  # on record, whoever wrote it: never again
                        done.add(it.key)
                        got = audit[it.key].outcome
                        log(f"{it.rule} {it.kind} {it.session_id}: on record already ({got}); not sent again")
                if orphans:
                    await _report_left_sending(watcher, engine, server, holder, log)
                for it in act:
                    if stop.is_set():
                        break
                    done.add(it.key)  # once, whatever the outcome: a failing action is not hammered
                    await _act(
                        watcher, it, engine=engine, redactor=redactor, holder=holder, log=log, clock=clock
                    )
                    handled += 1
        except SQLAlchemyError as exc:  # no audit, no action: tried again next tick
            log(f"actions paused: the audit could not be read or written ({type(exc).__name__})")
        await _pause(stop, tick)
    return handled


async def _act(
    watcher: Watcher,
    it: Intent,
    *,
    engine: Engine,
    redactor: Redactor,
    holder: str | None,
    log: Log,
    clock: Callable[[], float],
) -> None:
    """Re-check one intent, write it to the audit, send it, write its outcome."""
    server = watcher.client.base_url
    root = watcher.rec.root_of(it.session_id)
    res = await recheck(watcher.http, server, watcher.live, it)
    if res is not None:  # nothing to send: one row with the outcome
        log(f"{it.rule} {it.kind} {it.session_id}: {res.outcome} ({res.detail})")
        with session_scope(engine) as db:
            record_action(
                db, server, res, redactor=redactor, at=clock(), root_session_id=root, watcher=holder
            )
        return
    sending = Carried(it, "sending", f"{request_of(it)}: sent, no answer recorded yet")
    with session_scope(engine) as db:
        row_id = claim_action(
            db, server, sending, redactor=redactor, at=clock(), root_session_id=root, watcher=holder
        )
    if row_id is None:
        log(f"{it.rule} {it.kind} {it.session_id}: already on record; not sent")
        return
    res = await send(watcher.http, server, it)
    log(f"{it.rule} {it.kind} {it.session_id}: {res.outcome} ({res.detail})")
    try:
        with session_scope(engine) as db:
            settle_action(db, row_id, res, redactor=redactor)
    except SQLAlchemyError as exc:  # the row stays "sending": reported unknown by the next holder
        log(f"outcome of {it.rule} on {it.session_id} not stored: {exc}")


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
        now = await server_now(watcher.http, server, it)
        with session_scope(engine) as db:
            mark_unknown(db, r.id or 0, now)
        log(f"{r.rule} {r.action} {r.session_id}: unknown (watcher {r.watcher} died while sending); {now}")
