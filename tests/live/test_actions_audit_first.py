"""The audit is written before the request and read before acting (SQLite and PostgreSQL):
`act_loop` on a live board facing a fake server that counts what it is sent. The row of an
abort is ``sending`` while its request is on the wire and ``done`` after; an intent whose key
the store holds is not sent again; a row a dead watcher left ``sending`` becomes ``unknown``
with what the server shows now, and nothing is sent."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import cast

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.db import session_scope
from telemetry.tower.acting import act_loop
from telemetry.tower.actions import claim_action
from tower.act import Carried
from tower.actions import Intent, Rules
from tower.live_board import LiveBoard
from tower.watch import Watcher

BASE = "http://oc.test"
KEY = "abort:ses_a:msg_01"
RED = Redactor(b"k" * 32, [])


def _board() -> LiveBoard:
    b = LiveBoard(BASE)
    info = {"id": "msg_01", "sessionID": "ses_a", "role": "user", "time": {"created": 1}}
    b.on_event({"type": "message.updated", "properties": {"sessionID": "ses_a", "info": info}}, 1.0)
    retry = {"type": "retry", "attempt": 3, "message": "Overloaded", "next": 9_000_000}
    b.on_event(
        {"type": "session.status", "id": "evt_1", "properties": {"sessionID": "ses_a", "status": retry}}, 1.0
    )
    b.snapshot(2.0)
    return b


def _rows(engine: Engine) -> list[WatchAction]:
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(WatchAction)))


def _run(engine: Engine) -> tuple[list[str], list[str], list[str]]:
    """One act_loop over the board; what the server was sent, the audit outcome each request
    found on record as it arrived, and the log."""
    sent: list[str] = []
    seen: list[str] = []
    logs: list[str] = []

    def handle(req: httpx.Request) -> httpx.Response:
        if req.method == "POST":
            sent.append(req.url.path)
            seen.extend(r.outcome for r in _rows(engine))
            return httpx.Response(200, text="true")
        if req.url.path == "/session/status":
            return httpx.Response(200, json={"ses_a": {"type": "retry", "attempt": 3}})
        return httpx.Response(200, json={"id": "ses_a"})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
            w = SimpleNamespace(
                client=SimpleNamespace(base_url=BASE, is_v2=False, http=SimpleNamespace(auth=None)),
                live=_board(),
                rec=SimpleNamespace(root_of=lambda _s: None),
                http=http,
            )
            stop = asyncio.Event()
            loop = asyncio.create_task(
                act_loop(
                    cast(Watcher, w),
                    Rules(abort_retries_after=2),
                    stop,
                    engine=engine,
                    redactor=RED,
                    holder="host:1:me",
                    log=logs.append,
                    tick=0.05,
                )
            )
            await asyncio.sleep(0.5)  # several ticks: "once" must hold over more than one
            stop.set()
            await loop

    asyncio.run(go())
    return sent, seen, logs


def _left(engine: Engine, outcome: str) -> None:
    it = Intent("abort_retries_after", "abort", "ses_a", KEY, {"attempt": 3})
    with session_scope(engine) as db:
        claim_action(
            db,
            BASE,
            Carried(it, outcome, "POST /session/ses_a/abort: sent"),
            redactor=RED,
            at=time.time(),
            watcher="host:2:dead",
        )  # type: ignore[arg-type]


def test_the_intent_is_on_record_before_its_request_and_its_outcome_after(engine: Engine) -> None:
    sent, seen, _ = _run(engine)
    assert sent == ["/session/ses_a/abort"]  # once, over several ticks
    assert seen == ["sending"]  # the row was there, as "sending", when the request arrived
    (row,) = _rows(engine)
    assert (row.outcome, row.intent_key, row.answer, row.watcher) == ("done", KEY, "true", "host:1:me")


def test_a_row_a_dead_watcher_left_sending_is_reported_unknown_and_not_sent_again(engine: Engine) -> None:
    _left(engine, "sending")
    sent, _, logs = _run(engine)
    assert sent == []
    (row,) = _rows(engine)
    assert row.outcome == "unknown" and row.detail.startswith("watcher died while sending")
    assert "the server still shows it due; not sent again" in row.detail
    assert any("unknown (watcher host:2:dead died while sending)" in line for line in logs)


def test_an_intent_another_watcher_carried_out_is_not_sent_again(engine: Engine) -> None:
    _left(engine, "done")
    sent, _, _ = _run(engine)
    assert sent == []
    (row,) = _rows(engine)
    assert row.outcome == "done" and row.watcher == "host:2:dead"
