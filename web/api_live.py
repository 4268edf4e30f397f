"""`/api/live…`: the JSON twin of the console's "Running now" and of a live session's page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from archiver.bounds import INT32_MAX
from telemetry.queries.live import LOUDEST_FIRST, LivePage, get_live, list_live
from telemetry.queries.live_detail import LiveDetail, LiveTreeNode, live_detail
from telemetry.queries.live_messages import LiveMessagePage, live_message_page
from telemetry.timeutil import utcnow
from web.deps import ReadDbDep
from web.errors import ApiError

__all__ = ["LiveDetail", "LiveTreeNode", "router"]

router = APIRouter(prefix="/api/live", tags=["live"])


@router.get("", response_model=LivePage)
def live_sessions(
    db: ReadDbDep,
    state: Annotated[
        str | None,
        Query(description="Only this state.", json_schema_extra={"enum": ["", *LOUDEST_FIRST]}),
    ] = None,
    session_id: Annotated[
        str | None, Query(description="Only this session (an empty list if not live).")
    ] = None,
    q: Annotated[
        str | None,
        Query(
            max_length=500,
            description="Only sessions this search names: words in the title, ids, agent, model, "
            "or anything said or run so far; `tool:`, `agent:`, `model:`, `driver:`, `verdict:` "
            "(the language of GET /api/search).",
        ),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> LivePage:
    """Sessions running now (as `octel watch` sees them), loudest first, and counts per state."""
    if state and state not in LOUDEST_FIRST:
        msg = f"must be one of {', '.join(LOUDEST_FIRST)}"
        fields = [{"field": "query.state", "message": msg}]
        raise ApiError(422, "invalid_request", f"query.state: {msg}", fields)
    return list_live(db, utcnow(), state=state or None, session_id=session_id or None, q=q, limit=limit)


@router.get("/{session_id}", response_model=LiveDetail)
def live_session(session_id: str, db: ReadDbDep) -> LiveDetail:
    """One live session and its tree so far (parents before children)."""
    got = live_detail(db, session_id, utcnow())
    if got is None:
        raise ApiError(404, "not_found", f"no live session {session_id!r}")
    return got


@router.get("/{session_id}/messages", response_model=LiveMessagePage)
def live_messages(
    session_id: str,
    db: ReadDbDep,
    # bounded: past 64 bits SQLite's OFFSET overflows; a session keeps at most 200 messages
    offset: Annotated[
        int | None, Query(ge=0, le=INT32_MAX, description="First message; none: the newest page.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> LiveMessagePage:
    """A live session's messages so far (redacted, as `octel watch` stored them), oldest first."""
    me = get_live(db, session_id, utcnow())
    if me is None:
        raise ApiError(404, "not_found", f"no live session {session_id!r}")
    return live_message_page(db, me.server, session_id, offset, limit)
