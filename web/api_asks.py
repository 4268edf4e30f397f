"""`POST /api/v1/asks/{session_id}/reply`: answer the permission ask a live session waits on
(the console's "Allow once" / "Reject"), and `GET /api/v1/asks`: the asks pending now.

Answering needs the ingest (write) token, as every `/api/v1` write does: the read token or a
console login alone is a 401. The reply goes to the OpenCode server that owns the session,
after it confirms the ask is still pending; a gone ask is a 409 naming it. Audited: `GET
/api/v1/actions` and `octel actions list` show who answered (rule ``person``).
"""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from telemetry.queries.live import LivePage
from telemetry.tower.asks import AskRefused, AskReplyOut, pending_live_asks, reply_to_ask
from web.deps import EngineDep, SettingsDep, require_token
from web.errors import WRITE_ERROR_RESPONSES, ApiError

__all__ = ["router"]

router = APIRouter(prefix="/api/v1/asks", tags=["asks"])


class AskReplyIn(BaseModel):
    decision: Literal["allow", "reject"] = Field(description="allow: this once; reject: refuse the tool.")
    request_id: str | None = Field(
        None, max_length=200, description="The ask to answer; default: the one the live row shows."
    )
    by: str | None = Field(None, max_length=100, description="Who answers, for the audit row.")


@router.get("", response_model=LivePage)
def asks(engine: EngineDep) -> LivePage:
    """Live sessions waiting on a permission ask now (`octel asks list --json`)."""
    items = pending_live_asks(engine)
    return LivePage(items=items, counts={"waiting_permission": len(items)})


@router.post(
    "/{session_id}/reply",
    response_model=AskReplyOut,
    dependencies=[Depends(require_token)],
    responses=WRITE_ERROR_RESPONSES,
)
async def reply(
    session_id: str, body: AskReplyIn, request: Request, settings: SettingsDep, engine: EngineDep
) -> AskReplyOut:
    """Allow once or reject the ask; 404 no live session, 409 no ask or the ask is gone, 502
    the OpenCode server failed."""
    where = request.client.host if request.client else "unknown"
    by = f"{body.by or 'console'} ({where})"
    try:
        return await reply_to_ask(
            settings, engine, session_id, body.decision, by=by, request_id=body.request_id
        )
    except AskRefused as refused:
        raise ApiError(refused.status, refused.code, refused.message) from None
