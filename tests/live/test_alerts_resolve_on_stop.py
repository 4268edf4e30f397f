"""A watcher that stops resolves the rules' alerts still firing (SQLite and PostgreSQL): the act
loop aborts a retry storm (its ``live_rule`` alert fires while the session is active), then the
watcher stops: the alert's resolve goes to the sink, saying why. A term that ends because the
lease went to another watcher resolves nothing: that watcher goes on looking."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import httpx
import pytest
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.db import session_scope
from telemetry.tower.acting import act_loop
from tower.actions import Rules
from tower.alert import Alert
from tower.live_board import LiveBoard
from tower.watch import Watcher

BASE = "http://oc.test"
RED = Redactor(b"k" * 32, [])


def _storm() -> LiveBoard:
    b = LiveBoard(BASE)
    info = {"id": "msg_01", "sessionID": "ses_a", "role": "user", "time": {"created": 1}}
    b.on_event({"type": "message.updated", "properties": {"sessionID": "ses_a", "info": info}}, 1.0)
    retry = {"type": "retry", "attempt": 3, "message": "Overloaded", "next": 9_000_000}
    b.on_event({"type": "session.status", "properties": {"sessionID": "ses_a", "status": retry}}, 1.0)
    b.snapshot(2.0)
    return b


def _handle(req: httpx.Request) -> httpx.Response:
    if req.method == "POST":
        return httpx.Response(200, text="true")
    if req.url.path == "/session/status":
        return httpx.Response(200, json={"ses_a": {"type": "retry", "attempt": 3}})
    return httpx.Response(200, json={"id": "ses_a"})


class Sink:
    def __init__(self) -> None:
        self.alerts: list[Alert] = []

    def emit(self, alert: Alert) -> None:
        self.alerts.append(alert)


def _run(engine: Engine, *, watcher_stops: bool) -> list[Alert]:
    sink = Sink()

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(_handle)) as http:
            w = SimpleNamespace(
                client=SimpleNamespace(base_url=BASE, is_v2=False, http=SimpleNamespace(auth=None)),
                live=_storm(),
                rec=SimpleNamespace(root_of=lambda s: s),
                http=http,
            )
            term, stopping = asyncio.Event(), asyncio.Event()
            task = asyncio.create_task(
                act_loop(
                    cast(Watcher, w),
                    Rules(abort_retries_after=2),
                    term,
                    engine=engine,
                    redactor=RED,
                    sink=sink,
                    tick=0.05,
                    resolve_on=stopping,
                )
            )
            for _ in range(200):  # the abort done, and its alert fired at the tick after
                with session_scope(engine, write=False) as db:
                    done = db.exec(select(WatchAction).where(WatchAction.outcome == "done")).first()
                if done is not None and sink.alerts:
                    break
                await asyncio.sleep(0.05)
            if watcher_stops:
                stopping.set()
            term.set()
            await task

    asyncio.run(go())
    return sink.alerts


@pytest.mark.parametrize("watcher_stops", [True, False], ids=["watcher stops", "lease lost"])
def test_a_stopping_watcher_resolves_what_still_fires(engine: Engine, watcher_stops: bool) -> None:
    got = _run(engine, watcher_stops=watcher_stops)
    fired = [a for a in got if a.state == "firing"]
    assert fired and all(a.key == "live_rule:abort:ses_a:msg_01" for a in got), got
    resolved = [a for a in got if a.state == "resolved"]
    if not watcher_stops:
        assert resolved == []
        return
    (r,) = resolved
    assert r.key == fired[0].key and r.summary.endswith("(resolved: octel watch stopped following it)")
    assert got[-1] == r  # nothing fires after it
