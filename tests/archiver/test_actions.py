"""The rules' decision (pure, property-tested) and the re-check before acting: an intent whose
session moved on (ask answered, session deleted, server restarted) is never sent."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tower.act import carry_out, views_of
from tower.actions import Intent, Rules, SessionView, decide, parse_on_stuck
from tower.live import STATES
from tower.live_board import LiveBoard

DETECTORS = ["doom_loop", "permission_deadlock", "retry_cascade"]

finding = st.fixed_dictionaries(
    {"detector": st.sampled_from(DETECTORS), "verdict": st.sampled_from(["healthy", "suspect", "stuck"])}
)


@st.composite
def views(draw: st.DrawFn) -> SessionView:
    sid = "ses_" + draw(st.text("abcdef0123456789", min_size=4, max_size=8))
    asks = tuple((f"per_{sid}_{i}", draw(st.floats(0, 1000))) for i in range(draw(st.integers(0, 2))))
    return SessionView(
        session_id=sid,
        state=draw(st.sampled_from(STATES)),
        asks=asks,
        ask_id=asks[0][0] if asks else None,
        asked_at=asks[0][1] if asks else None,
        retry_attempt=draw(st.integers(0, 10)),
        findings=tuple(draw(st.lists(finding, max_size=3))),
        run_since=draw(st.one_of(st.none(), st.floats(0, 1000))),
    )


rules_st = st.builds(
    Rules,
    deny_asks_after=st.one_of(st.none(), st.floats(0, 600)),
    abort_retries_after=st.one_of(st.none(), st.integers(1, 8)),
    on_stuck=st.lists(
        st.tuples(st.sampled_from(DETECTORS), st.sampled_from(["abort", "notify"])),
        max_size=2,
        unique_by=lambda p: p[0],
    ).map(tuple),
)


@given(st.lists(views(), max_size=6, unique_by=lambda v: v.session_id), rules_st, st.floats(0, 2000))
def test_each_intent_is_justified_by_its_rule(vs: list[SessionView], rules: Rules, now: float) -> None:
    by_id = {v.session_id: v for v in vs}
    got = decide(vs, rules, now)
    for it in got:
        v = by_id[it.session_id]
        assert v.state not in ("idle", "errored", "deleted", "unknown")
        if it.rule == "deny_asks_after":
            assert rules.deny_asks_after is not None and v.state == "waiting_permission"
            asked = dict(v.asks)[str(it.request_id)]
            assert now - asked >= rules.deny_asks_after and it.kind == "reject_ask"
        elif it.rule == "abort_retries_after":
            assert rules.abort_retries_after is not None and v.state == "retrying"
            assert v.retry_attempt >= rules.abort_retries_after and it.kind == "abort"
        else:
            det = it.evidence["detector"]
            assert (det, "abort" if it.kind == "abort" else "notify") in rules.on_stuck
            assert {"detector": det, "verdict": "stuck"} in [dict(f) for f in v.findings]
    keys = [it.key for it in got]
    assert len(keys) == len(set(keys))
    # no session is aborted twice in one decision
    aborts = [it.session_id for it in got if it.kind == "abort"]
    assert len(aborts) == len(set(aborts))


@given(st.lists(views(), max_size=6, unique_by=lambda v: v.session_id), rules_st, st.floats(0, 2000))
def test_what_was_done_is_never_decided_again(vs: list[SessionView], rules: Rules, now: float) -> None:
    first = decide(vs, rules, now)
    assert decide(vs, rules, now, {it.key for it in first}) == []
    # and a later look still asks nothing new of the same sessions in the same states
    assert all(
        it.key in {f.key for f in first}
        for it in decide(vs, rules, now + 1, set())
        if it.rule != "deny_asks_after"
    )


@given(st.lists(views(), max_size=6), st.floats(0, 2000))
def test_no_rule_observes_only(vs: list[SessionView], now: float) -> None:
    assert decide(vs, Rules(), now) == []


@given(st.lists(views(), max_size=6, unique_by=lambda v: v.session_id), rules_st)
def test_an_ask_is_rejected_once_its_wait_reaches_the_rule(vs: list[SessionView], rules: Rules) -> None:
    if rules.deny_asks_after is None:
        return
    for v in vs:
        if v.state != "waiting_permission":
            continue
        for rid, at in v.asks:
            late = at + rules.deny_asks_after
            while late - at < rules.deny_asks_after:  # the first float at which the wait has reached it
                late = math.nextafter(late, math.inf)
            assert any(i.request_id == rid for i in decide([v], rules, late))
            assert not any(i.request_id == rid for i in decide([v], rules, late - 0.5))


def test_on_stuck_items_parse_and_bad_ones_are_named() -> None:
    assert parse_on_stuck(["doom_loop=abort", "retry_cascade=notify,permission_deadlock=abort"]) == (
        ("doom_loop", "abort"),
        ("permission_deadlock", "abort"),
        ("retry_cascade", "notify"),
    )
    for bad in ("doom_loop", "doom_loop=kill", "=abort"):
        with pytest.raises(ValueError, match="DETECTOR=abort"):
            parse_on_stuck([bad])


# -- the re-check before acting ------------------------------------------------------------

BASE = "http://oc.test"
ASK = {
    "type": "permission.asked",
    "properties": {"id": "per_1", "sessionID": "ses_a", "permission": "bash", "patterns": ["git push"]},
}


def _board(*events: dict[str, Any]) -> LiveBoard:
    b = LiveBoard(BASE)
    b.on_event(
        {
            "type": "session.status",
            "id": "evt_1",
            "properties": {"sessionID": "ses_a", "status": {"type": "busy"}},
        },
        1.0,
    )
    for e in events:
        b.on_event(e, 2.0)
    b.snapshot(3.0)
    return b


def _server(
    pending: list[Any], status: dict[str, Any], *, session: int = 200, reply: tuple[int, str] = (200, "true")
) -> tuple[httpx.AsyncClient, list[str]]:
    sent: list[str] = []

    def handle(req: httpx.Request) -> httpx.Response:
        path = req.url.path
        if req.method == "POST":
            sent.append(f"{path} {req.content.decode()}")
            return httpx.Response(reply[0], text=reply[1])
        if path == "/permission":
            return httpx.Response(200, json=pending)
        if path == "/session/status":
            return httpx.Response(200, json=status)
        if session == 404:
            return httpx.Response(
                404, json={"name": "NotFoundError", "data": {"message": "Session not found"}}
            )
        return httpx.Response(200, json={"id": "ses_a"})

    return httpx.AsyncClient(transport=httpx.MockTransport(handle)), sent


def _deny(board: LiveBoard) -> Intent:
    rules = Rules(deny_asks_after=60)
    (it,) = decide(views_of(board, 1000.0, findings=False), rules, 1000.0)
    return it


def _run(http: httpx.AsyncClient, board: LiveBoard, it: Intent) -> Any:
    async def go() -> Any:
        async with http:
            return await carry_out(http, BASE, board, it)

    return asyncio.run(go())


def test_an_ask_still_pending_is_rejected_through_the_reply_route() -> None:
    board = _board(ASK)
    http, sent = _server([{"id": "per_1", "sessionID": "ses_a"}], {"ses_a": {"type": "busy"}})
    got = _run(http, board, _deny(board))
    assert got.outcome == "done" and got.status == 200
    assert len(sent) == 1 and sent[0].startswith("/permission/per_1/reply ")
    assert json.loads(sent[0].split(" ", 1)[1])["reply"] == "reject"


def test_an_ask_answered_meanwhile_is_skipped_and_nothing_is_sent() -> None:
    board = _board(ASK)
    it = _deny(board)
    http, sent = _server([], {"ses_a": {"type": "busy"}})  # the server no longer lists it
    got = _run(http, board, it)
    assert got.outcome == "skipped" and "no longer lists the ask" in got.detail and sent == []
    # the reply event arrives: the watcher's own state says so, before asking the server
    board.on_event(
        {
            "type": "permission.replied",
            "properties": {"sessionID": "ses_a", "requestID": "per_1", "reply": "once"},
        },
        4.0,
    )
    http, sent = _server([{"id": "per_1", "sessionID": "ses_a"}], {"ses_a": {"type": "busy"}})
    got = _run(http, board, it)
    assert got.outcome == "skipped" and got.detail == "the ask was answered" and sent == []


def test_an_ask_replied_twice_is_gone_not_failed() -> None:
    board = _board(ASK)
    http, sent = _server(
        [{"id": "per_1", "sessionID": "ses_a"}],
        {"ses_a": {"type": "busy"}},
        reply=(404, '{"name":"PermissionNotFoundError"}'),
    )
    got = _run(http, board, _deny(board))
    assert (
        got.outcome == "gone" and got.status == 404 and "PermissionNotFound" in got.answer and len(sent) == 1
    )


def test_a_deleted_session_is_never_acted_on() -> None:
    board = _board(ASK)
    it = _deny(board)
    http, sent = _server([{"id": "per_1", "sessionID": "ses_a"}], {}, session=404)
    got = _run(http, board, it)
    assert got.outcome == "skipped" and "deleted" in got.detail and sent == []
    board.on_event(
        {"type": "session.deleted", "properties": {"sessionID": "ses_a", "info": {"id": "ses_a"}}}, 5
    )
    http, sent = _server([{"id": "per_1", "sessionID": "ses_a"}], {"ses_a": {"type": "busy"}})
    assert _run(http, board, it).detail == "the session was deleted" and sent == []


def test_a_retry_that_stopped_or_a_restarted_server_is_skipped() -> None:
    retry = {
        "type": "session.status",
        "id": "evt_2",
        "properties": {
            "sessionID": "ses_a",
            "status": {"type": "retry", "attempt": 4, "message": "Overloaded", "next": 1},
        },
    }
    board = _board(retry)
    (it,) = decide(views_of(board, 10.0, findings=False), Rules(abort_retries_after=3), 10.0)
    assert it.kind == "abort" and it.evidence["attempt"] == 4
    http, sent = _server([], {})  # restarted: nothing in its status map
    got = _run(http, board, it)
    assert got.outcome == "skipped" and "idle" in got.detail and sent == []
    http, sent = _server([], {"ses_a": {"type": "busy"}})
    assert "no longer retrying" in _run(http, board, it).detail and sent == []
    http, sent = _server([], {"ses_a": {"type": "retry", "attempt": 5}})
    got = _run(http, board, it)
    assert got.outcome == "done" and sent == ["/session/ses_a/abort "]


def test_an_unreachable_server_is_a_failure_said_in_words() -> None:
    board = _board(ASK)

    def down(req: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=req)

    got = _run(httpx.AsyncClient(transport=httpx.MockTransport(down)), board, _deny(board))
    assert got.outcome == "failed" and "ConnectError" in got.detail
