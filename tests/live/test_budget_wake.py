"""A budget breach is acted on in the tick that sees it (SQLite and PostgreSQL): `act_loop`
with an hour-long tick over a live board facing a fake server. A turn's cost arriving on the
board wakes the loop, so the abort leaves in the tick the breach was first seen (the audit row
says both ticks), not an hour later; the aborts of several sessions over one budget leave at
once: the fake server holds the first until the second has arrived."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import cast

import httpx
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.db import session_scope
from telemetry.tower.acting import act_loop
from telemetry.tower.budget_watch import BudgetWatch
from tower.actions import Rules
from tower.budgets import Budget
from tower.live_board import LiveBoard
from tower.watch import Watcher

BASE = "http://oc.test"
RED = Redactor(b"k" * 32, [])
HOUR = 3600.0


def _busy(b: LiveBoard, sid: str) -> None:
    info = {"id": f"msg_{sid}_0", "sessionID": sid, "role": "user", "time": {"created": 1}}
    b.on_event({"type": "message.updated", "properties": {"sessionID": sid, "info": info}}, 1.0)
    busy = {"type": "session.status", "properties": {"sessionID": sid, "status": {"type": "busy"}}}
    b.on_event(busy, 1.0)
    b.snapshot(1.5)  # as the watcher's step does: the session counts as active


def _turn(b: LiveBoard, sid: str, cost: float) -> None:
    info = {
        "id": f"msg_{sid}_1",
        "sessionID": sid,
        "role": "assistant",
        "cost": cost,
        "tokens": {"input": 10, "output": 5},
        "time": {"created": 2},
    }
    b.on_event({"type": "message.updated", "properties": {"sessionID": sid, "info": info}}, 2.0)


def _rows(engine: Engine) -> list[WatchAction]:
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(WatchAction).where(WatchAction.outcome != "sending")))


async def _loop(
    engine: Engine, board: LiveBoard, budgets: BudgetWatch, handle: httpx.AsyncBaseTransport, spend: list[str]
) -> list[WatchAction]:
    """The act loop with an hour's tick; after its first tick each session in ``spend`` spends
    $0.02; the audit rows once every such session has one (or after 20 s)."""
    async with httpx.AsyncClient(transport=handle) as http:
        w = SimpleNamespace(
            client=SimpleNamespace(base_url=BASE, is_v2=False, http=SimpleNamespace(auth=None)),
            live=board,
            rec=SimpleNamespace(root_of=lambda s: s),
            http=http,
        )
        stop = asyncio.Event()
        task = asyncio.create_task(
            act_loop(cast(Watcher, w), Rules(), stop, engine=engine, redactor=RED, budgets=budgets, tick=HOUR)
        )
        await asyncio.sleep(0.3)  # the first tick has passed: the next is an hour away
        for sid in spend:
            _turn(board, sid, 0.02)
        for _ in range(200):
            if len(_rows(engine)) >= len(spend):
                break
            await asyncio.sleep(0.1)
        stop.set()
        await task
    return _rows(engine)


def _server(hold_first: bool = False) -> tuple[httpx.MockTransport, list[str]]:
    sent: list[str] = []
    both = asyncio.Event()

    async def handle(req: httpx.Request) -> httpx.Response:
        if req.method == "POST":
            sent.append(req.url.path)
            if len(sent) >= 2:
                both.set()
            if hold_first and len(sent) == 1:  # answered only once the second abort came
                try:
                    await asyncio.wait_for(both.wait(), 5.0)
                except TimeoutError:
                    return httpx.Response(503, text="held alone")
            return httpx.Response(200, text="true")
        if req.url.path == "/session/status":
            return httpx.Response(200, json={"ses_a": {"type": "busy"}, "ses_b": {"type": "busy"}})
        return httpx.Response(200, json={"id": req.url.path.rsplit("/", 1)[-1]})

    return httpx.MockTransport(handle), sent


def test_a_turn_that_breaks_a_budget_is_aborted_in_the_tick_that_sees_it(engine: Engine) -> None:
    board = LiveBoard(BASE)
    _busy(board, "ses_a")
    transport, sent = _server()
    budgets = BudgetWatch([Budget("tree", 0.01, warn_at=1)])
    (row,) = asyncio.run(_loop(engine, board, budgets, transport, ["ses_a"]))
    assert sent == ["/session/ses_a/abort"]
    assert (row.rule, row.outcome, row.session_id) == ("budget", "done", "ses_a")
    ev = row.evidence or {}
    assert ev["acted_tick"] == ev["breach_tick"] == 2, ev  # woken by the cost, not an hour later


def test_the_sessions_over_one_budget_are_aborted_at_once(engine: Engine) -> None:
    board = LiveBoard(BASE)
    _busy(board, "ses_a")
    _busy(board, "ses_b")
    transport, sent = _server(hold_first=True)
    budgets = BudgetWatch([Budget("fleet_day", 0.03, warn_at=1)])
    rows = asyncio.run(_loop(engine, board, budgets, transport, ["ses_a", "ses_b"]))
    assert sorted(sent) == ["/session/ses_a/abort", "/session/ses_b/abort"]
    assert sorted((r.session_id, r.outcome, r.answer) for r in rows) == [
        ("ses_a", "done", "true"),
        ("ses_b", "done", "true"),
    ]
