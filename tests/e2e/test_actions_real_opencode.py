"""End to end on a real `opencode serve` with the scripted fake LLM: the watch rules act and
leave an audit row. An ask nobody answers is rejected after the configured wait; a provider
that keeps answering 529 is aborted at the configured attempt; an ask answered just before the
action is skipped, and the audit row says so."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from driver import idle, start, wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlalchemy.engine import Engine
from watch_thread import Store, Watch

from archiver.redact import Redactor
from telemetry.queries.actions import ActionOut, list_actions
from telemetry.store.db import session_scope
from telemetry.tower.actions import record_action
from tower.act import carry_out, views_of
from tower.actions import Rules, decide
from tower.live_board import LiveBoard

pytestmark = pytest.mark.opencode

ASK = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}
PUSH = {
    "title": "Push it",
    "turns": [
        {
            "text": "Pushing.",
            "tool_calls": [{"name": "bash", "arguments": {"command": "git push origin main"}}],
        },
        {"text": "Done."},
    ],
}


def _actions(engine: Engine) -> list[ActionOut]:
    with session_scope(engine, write=False) as db:
        return list_actions(db).items


def test_an_unanswered_ask_is_rejected_after_the_wait_and_audited(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    fake_llm.load(PUSH)
    with (
        watch(rules=Rules(deny_asks_after=3.0), lease_seconds=6.0) as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        engine, logs = watched.engine, watched.logs
        root = start(http, "Push the branch.", ASK)
        pending = wait_for(lambda: [p for p in http.get("/permission").json() if p["sessionID"] == root])
        asked = time.monotonic()
        (row,) = wait_for(
            lambda: [a for a in _actions(engine) if a.session_id == root and a.outcome != "sending"]
        )
        assert time.monotonic() - asked >= 2.0  # not before the wait (less the poll lag)
        assert (row.rule, row.action, row.outcome, row.answer_status) == (
            "deny_asks_after",
            "reject_ask",
            "done",
            200,
        )
        assert row.evidence["request_id"] == pending[0]["id"] and row.evidence["waited_s"] >= 3.0
        assert "git push origin main" in row.evidence["patterns"] and row.server == opencode.url.rstrip("/")
        assert not [p for p in http.get("/permission").json() if p["sessionID"] == root]
        idle(http, root)  # a rejected ask stops the run
        msgs = http.get(f"/session/{root}/message").json()
        tools = [p for m in msgs for p in m["parts"] if p["type"] == "tool"]
        assert tools and tools[-1]["state"]["status"] == "error" and "rejected" in tools[-1]["state"]["error"]
        time.sleep(1.5)
        assert (
            len([a for a in _actions(engine) if a.session_id == root and a.outcome != "sending"]) == 1
        )  # once, never again
        assert any("deny_asks_after reject_ask" in line for line in logs)


def test_provider_retries_are_aborted_at_the_attempt_and_audited(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    overloaded = {"http_error": 529, "message": "Overloaded"}
    fake_llm.load({"title": "Retry", "turns": [overloaded] * 8 + [{"text": "Finally."}]})
    with (
        watch(rules=Rules(abort_retries_after=2), lease_seconds=6.0) as watched,
        httpx.Client(base_url=opencode.url, timeout=15) as http,
    ):
        engine = watched.engine
        root = start(http, "Say something.")
        (row,) = wait_for(
            lambda: [a for a in _actions(engine) if a.session_id == root and a.outcome != "sending"],
            timeout=90,
        )
        assert (row.rule, row.action, row.outcome) == ("abort_retries_after", "abort", "done")
        assert row.evidence["attempt"] >= 2 and row.answer == "true"
        idle(http, root, timeout=30)
        calls = len(fake_llm.requests)
        time.sleep(6.0)  # past the next backoff: an aborted run calls the provider no more
        assert len(fake_llm.requests) == calls


def test_an_ask_answered_just_before_the_action_is_skipped_and_audited(
    opencode: OpenCode, fake_llm: FakeLLM, octel_store: Store
) -> None:
    fake_llm.load(PUSH)
    engine = octel_store.engine
    with httpx.Client(base_url=opencode.url, timeout=15) as http:
        root = start(http, "Push the branch.", ASK)
        pending = wait_for(lambda: [p for p in http.get("/permission").json() if p["sessionID"] == root])
        board = LiveBoard(opencode.url.rstrip("/"))
        now = time.time()
        board.on_status_poll(http.get("/session/status").json(), now)
        board.on_permissions_poll(http.get("/permission").json(), now)
        board.snapshot(now)
        (intent,) = [
            i
            for i in decide(views_of(board, now, findings=False), Rules(deny_asks_after=0), now)
            if i.session_id == root
        ]
        # a person answers in the moment between the decision and the action
        assert http.post(f"/permission/{pending[0]['id']}/reply", json={"reply": "once"}).json() is True

        async def act() -> Any:
            async with httpx.AsyncClient() as ahttp:
                return await carry_out(ahttp, opencode.url, board, intent)

        done = asyncio.run(act())
        assert done.outcome == "skipped" and "no longer lists the ask" in done.detail and done.status is None
        with session_scope(engine) as db:
            record_action(db, opencode.url, done, redactor=Redactor(b"k" * 32, []), at=time.time())
        (row,) = _actions(engine)
        assert (row.outcome, row.rule, row.session_id) == ("skipped", "deny_asks_after", root)
        idle(http, root)
        msgs = http.get(f"/session/{root}/message").json()
        tools = [p for m in msgs for p in m["parts"] if p["type"] == "tool"]
        assert tools[-1]["state"]["status"] == "completed"  # the person's answer stood
