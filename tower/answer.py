"""Answer a permission ask for a person (the console's "Allow once" / "Reject", `octel asks
reply`): check with the server that owns the session that the ask is still pending, then send
the reply through the OpenCode client (1.x: ``POST /permission/{id}/reply {reply}``; 2.x: the
V2 adapter's ``{decision}``). Every path returns a `Carried` for the audit row; an ask the
server no longer lists is ``gone`` with nothing sent.
"""

from __future__ import annotations

from typing import Literal

from archiver.client import OpenCodeClient
from archiver.errors import FetchError
from tower.act import Carried
from tower.actions import Intent

__all__ = ["DECISIONS", "Decision", "answer_ask", "pending_asks"]

Decision = Literal["allow", "reject"]
DECISIONS: tuple[Decision, ...] = ("allow", "reject")
# a person allows once: "always" would change the server's rules beyond this one ask
_CLASSIC = {"allow": "once", "reject": "reject"}


async def pending_asks(client: OpenCodeClient, session_id: str) -> list[str]:
    """The request ids of the asks the server lists as pending for the session now."""
    try:
        await client.probe()
    except FetchError as err:
        if err.error_kind not in ("unsupported", "not_found", "malformed"):
            raise  # unreachable or refused: the caller says so
    if client.is_v2:
        items = await client.v2.permissions(session_id)
    else:
        items = [p for p in await client.permissions() if p.get("sessionID") == session_id]
    return [str(p["id"]) for p in items if isinstance(p.get("id"), str)]


def intent_of(session_id: str, request_id: str, decision: Decision, by: str) -> Intent:
    return Intent(
        rule="person",
        kind="allow_ask" if decision == "allow" else "reject_ask",
        session_id=session_id,
        key=f"person:{request_id}",
        evidence={"request_id": request_id, "decision": decision, "by": by},
        request_id=request_id,
    )


async def answer_ask(
    client: OpenCodeClient, session_id: str, request_id: str, decision: Decision, *, by: str
) -> Carried:
    """Re-check, then reply; never raises for server trouble."""
    it = intent_of(session_id, request_id, decision, by)
    try:
        pending = await pending_asks(client, session_id)
    except FetchError as exc:
        return Carried(it, "failed", f"could not re-check with the server ({exc.error_kind}: {exc})")
    if request_id not in pending:
        why = f"ask {request_id} is no longer pending on {client.base_url} (answered, or its run ended)"
        return Carried(it, "gone", why)
    message = f"octel: {'allowed once' if decision == 'allow' else 'rejected'} by {by}"
    try:
        if client.is_v2:
            what = f"POST /api/session/{session_id}/permission/{request_id}/reply {_CLASSIC[decision]}"
            await client.v2.reply(session_id, request_id, _CLASSIC[decision], message)
            status, body = 200, ""
        else:
            what = f"POST /permission/{request_id}/reply {_CLASSIC[decision]}"
            # a reject's message reaches the model as the reason the tool was refused
            sent = {"reply": _CLASSIC[decision], **({"message": message} if decision == "reject" else {})}
            path = f"/permission/{request_id}/reply"
            reply = await client.http.request("POST", path, json_body=sent, idempotent=False)
            status, body = reply.status, str(reply.body).lower()
    except FetchError as exc:
        if exc.status == 404 or exc.error_kind == "not_found":
            return Carried(it, "gone", f"{what}: the server no longer knew the ask", exc.status)
        return Carried(it, "failed", f"{what}: {exc.error_kind}: {exc}", exc.status)
    return Carried(it, "done", what, status, body[:300])
