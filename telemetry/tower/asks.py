"""Answer the permission ask a live session waits on (the console's "Allow once" / "Reject",
`POST /api/v1/asks/{session_id}/reply`, `octel asks reply`): the live row names the server
that owns the session and the ask; `tower.answer` re-checks it with that server and replies;
the audit row (rule ``person``, who answered in ``watcher``) is written whatever happened.

A refusal is an `AskRefused` carrying the HTTP status the API answers and the sentence the
CLI prints: 404 no live session, 409 no ask or the ask is gone, 502 the server failed.
"""

from __future__ import annotations

import time

import httpx
from pydantic import BaseModel
from sqlalchemy.engine import Engine

from archiver.client import OpenCodeClient
from telemetry.queries.live import LiveSessionOut, get_live, list_live
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from telemetry.tower.actions import record_action
from tower.answer import Decision, answer_ask

__all__ = ["AskRefused", "AskReplyOut", "pending_live_asks", "reply_to_ask"]

_STATUS = {"gone": 409, "failed": 502}


class AskReplyOut(BaseModel):
    session_id: str
    server: str
    request_id: str
    decision: str
    outcome: str  # done, gone, failed (as the audit row says)
    detail: str
    action_id: int | None  # the audit row (`octel actions list`)


class AskRefused(Exception):
    def __init__(self, status: int, code: str, message: str, reply: AskReplyOut | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.reply = status, code, message, reply


def pending_live_asks(engine: Engine, *, limit: int = 200) -> list[LiveSessionOut]:
    """The live sessions waiting on an ask now, longest wait first."""
    with session_scope(engine, write=False) as db:
        page = list_live(db, utcnow(), state="waiting_permission", limit=limit)
    return [r for r in page.items if r.ask is not None and r.ask.request_id]


def _the_ask(engine: Engine, session_id: str, request_id: str | None) -> tuple[LiveSessionOut, str]:
    with session_scope(engine, write=False) as db:
        me = get_live(db, session_id, utcnow())
    if me is None:
        raise AskRefused(404, "not_found", f"no live session {session_id!r}: octel watch follows none such")
    rid = request_id or (me.ask.request_id if me.ask is not None else None)
    if not rid:
        raise AskRefused(409, "no_ask", f"session {session_id} waits on no permission ask (it is {me.state})")
    return me, rid


async def reply_to_ask(
    settings: Settings,
    engine: Engine,
    session_id: str,
    decision: Decision,
    *,
    by: str,
    request_id: str | None = None,
    http: httpx.AsyncClient | None = None,
) -> AskReplyOut:
    """Answer the ask ``session_id`` waits on (or ``request_id`` of it), audited; an
    `AskRefused` unless the server took the reply."""
    me, rid = _the_ask(engine, session_id, request_id)
    password = settings.opencode_password.get_secret_value() if settings.opencode_password else None
    own = http is None
    client_http = http or httpx.AsyncClient(timeout=httpx.Timeout(15.0, connect=5.0))
    try:
        client = OpenCodeClient(
            client_http, me.server, retries=1, password=password, username=settings.opencode_username
        )
        done = await answer_ask(client, session_id, rid, decision, by=by)
    finally:
        if own:
            await client_http.aclose()
    with session_scope(engine) as db:
        row = record_action(
            db,
            me.server,
            done,
            redactor=redactor_for(settings),
            at=time.time(),
            root_session_id=me.root_session_id,
            watcher=by,
        )
        db.flush()
        action_id = row.id
    out = AskReplyOut(
        session_id=session_id,
        server=me.server,
        request_id=rid,
        decision=decision,
        outcome=done.outcome,
        detail=done.detail,
        action_id=action_id,
    )
    if done.outcome != "done":
        raise AskRefused(_STATUS.get(done.outcome, 502), f"ask_{done.outcome}", done.detail, out)
    return out
