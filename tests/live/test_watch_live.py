"""The watch loop with its live board: a run blocked on an ask is never archived as finished;
bad input (malformed JSON, unknown events, a lost server) keeps every row, saying `unknown`."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import orjson

from archiver.client import OpenCodeClient
from tower.live_board import LiveRow
from tower.watch import WatchConfig, Watcher

ROOT = "ses_root1"
ASK = {"id": "per_2289eded8001a", "sessionID": ROOT, "permission": "bash", "patterns": ["git push *"]}


class _Clock:
    now = 1_795_977_830.0

    def __call__(self) -> float:
        return self.now


def _ev(kind: str, **props: Any) -> str:
    return orjson.dumps({"type": kind, "properties": {"sessionID": ROOT, **props}}).decode()


def _watcher(rows: list[LiveRow], archived: list[str], handler: Any = None) -> tuple[Watcher, _Clock]:
    async def on_archive(root: str, _s: Any, _p: Any) -> None:
        archived.append(root)

    async def on_live(batch: list[LiveRow]) -> None:
        rows.extend(batch)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler or (lambda r: httpx.Response(404))))
    clock = _Clock()
    w = Watcher(
        OpenCodeClient(http, "http://oc"),
        http,
        on_archive,
        config=WatchConfig(settle_seconds=2.0),
        on_live=on_live,
        clock=clock,
    )
    return w, clock


def test_a_run_waiting_on_an_ask_is_not_archived_even_when_its_busy_status_was_missed() -> None:
    rows: list[LiveRow] = []
    archived: list[str] = []
    w, clock = _watcher(rows, archived)

    async def go() -> None:
        # the watcher connected after the run went busy: it sees the session and the ask only
        w._event(_ev("session.created", info={"id": ROOT, "title": "push it"}))
        w._event(_ev("permission.asked", **ASK))
        for _ in range(10):
            clock.now += 60
            await w.step()
        assert archived == [], "a run blocked on an ask has not finished"
        last = [r for r in rows if r.session_id == ROOT][-1]
        assert last.state == "waiting_permission" and last.permission_patterns == ("git push *",)
        assert clock.now - last.state_since >= 599
        dead = next(f for f in last.findings if f["detector"] == "permission_deadlock")
        assert dead["verdict"] == "stuck" and dead["evidence"]["waited_s"] >= 599
        w._event(_ev("permission.replied", requestID=ASK["id"], reply="once"))
        w._event(_ev("session.idle"))
        clock.now += 3
        await w.step()
        assert archived == [ROOT]
        await w.http.aclose()

    asyncio.run(go())


def test_malformed_and_unknown_events_are_counted_not_fatal() -> None:
    rows: list[LiveRow] = []
    w, clock = _watcher(rows, [])

    async def go() -> None:
        w._event(_ev("session.status", status={"type": "busy"}))
        w._event("{not json")
        w._event(_ev("no.such.event"))
        w._event('"a bare string"')
        clock.now += 1
        await w.step()
        await w.http.aclose()

    asyncio.run(go())
    assert w.bad_events == 1 and w.live.ignored_events >= 1
    assert [r.state for r in rows if r.session_id == ROOT] == ["busy"]


def test_a_server_that_disappears_turns_its_rows_unknown() -> None:
    rows: list[LiveRow] = []

    def down(_req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")

    w, clock = _watcher(rows, [], down)

    async def go() -> None:
        w._event(_ev("session.status", status={"type": "busy"}))
        await w.step()
        clock.now += 1
        await w.poll_once()  # the poll fallback cannot reach the server either
        await w.step()
        await w.http.aclose()

    asyncio.run(go())
    states = [(r.state, r.reason) for r in rows if r.session_id == ROOT]
    assert states[0][0] == "busy" and states[-1][0] == "unknown" and "unreachable" in states[-1][1]


def test_a_prompt_the_server_has_not_started_on_yet_holds_its_tree() -> None:
    archived: list[str] = []
    w, clock = _watcher([], archived)

    async def go() -> None:
        w._event(_ev("session.created", info={"id": ROOT}))
        w._event(_ev("message.updated", info={"id": "msg_1", "role": "user", "sessionID": ROOT}))
        clock.now += 5  # a cold server: no busy status yet, well past the settle delay
        await w.step()
        assert archived == []
        clock.now += 60  # the prompt never started: the tree is archived as it is
        await w.step()
        assert archived == [ROOT]
        await w.http.aclose()

    asyncio.run(go())


def test_a_finished_run_is_archived_once_when_its_prompt_is_updated_after_idle() -> None:
    """OpenCode updates the user message (its diff summary) a moment after the run goes idle:
    that is not a new prompt. Taken for one, it held the tree for 30 s as "starting", and a tree
    archived before that update came was archived again."""
    rows: list[LiveRow] = []
    archived: list[str] = []
    w, clock = _watcher(rows, archived)
    prompt = {"id": "msg_u1", "sessionID": ROOT, "role": "user", "time": {"created": 1}}

    async def go() -> None:
        w._event(_ev("session.created", info={"id": ROOT, "title": "t"}))
        w._event(_ev("message.updated", info=prompt))  # the prompt, before the run goes busy
        w._event(_ev("session.status", status={"type": "busy"}))
        w._event(_ev("message.updated", info={"id": "msg_a1", "sessionID": ROOT, "role": "assistant"}))
        w._event(_ev("session.idle"))
        clock.now += 0.8
        w._event(_ev("message.updated", info={**prompt, "summary": {"diffs": []}}))
        for _ in range(8):  # 4 s: past the settle, well inside 30 s
            clock.now += 0.5
            await w.step()
        assert archived == [ROOT]
        await w.http.aclose()

    asyncio.run(go())
