"""`GET /api/v1/actions`: the audit trail of `octel watch`'s rules, the JSON twin of the
console's "Actions" section and of `octel actions list --json`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from telemetry.queries.actions import MAX_ACTIONS, ActionPage, list_actions
from telemetry.timeutil import Since
from web.deps import ReadDbDep

__all__ = ["router"]

router = APIRouter(prefix="/api/v1/actions", tags=["actions"])


@router.get("", response_model=ActionPage)
def actions(
    db: ReadDbDep,
    since: Since = None,
    session_id: Annotated[str | None, Query(description="Only this session (or the tree it roots).")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_ACTIONS)] = 100,
) -> ActionPage:
    """Actions of the watch rules on live sessions (done, skipped, gone, failed, notified,
    sending, unknown), newest first, each with its evidence and what the server answered."""
    return list_actions(db, since=since, session_id=session_id or None, limit=limit)
