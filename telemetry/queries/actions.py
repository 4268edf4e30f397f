"""Read the audit trail of `octel watch`'s rules: newest first, by time and session. One typed
model serves `GET /api/v1/actions` and `octel actions list --json`."""

from __future__ import annotations

from datetime import datetime
from typing import Any, TypedDict

from pydantic import BaseModel
from sqlalchemy import or_
from sqlmodel import Session, col, select

from telemetry.store.action_models import WatchAction
from telemetry.timeutil import as_utc

__all__ = ["MAX_ACTIONS", "ActionOut", "ActionPage", "BudgetAction", "budget_action", "list_actions"]

MAX_ACTIONS = 1000


class ActionOut(BaseModel):
    id: int
    at: datetime
    server: str
    session_id: str
    root_session_id: str | None
    rule: str
    action: str
    outcome: str
    detail: str
    evidence: dict[str, Any]
    answer_status: int | None
    answer: str | None
    watcher: str | None


class ActionPage(BaseModel):
    items: list[ActionOut]


def _out(r: WatchAction) -> ActionOut:
    """The stored row as it is answered: every column by its name, the time in UTC."""
    same = {k: getattr(r, k) for k in ActionOut.model_fields}
    return ActionOut(**{**same, "id": r.id or 0, "at": as_utc(r.at), "evidence": r.evidence or {}})


def list_actions(
    db: Session, *, since: datetime | None = None, session_id: str | None = None, limit: int = 100
) -> ActionPage:
    """Actions newest first; `session_id` matches the session or its root."""
    q = select(WatchAction)
    if since is not None:
        q = q.where(col(WatchAction.at) >= since)
    if session_id:
        mine = col(WatchAction.session_id) == session_id
        q = q.where(mine | (col(WatchAction.root_session_id) == session_id))
    q = q.order_by(col(WatchAction.at).desc(), col(WatchAction.id).desc())
    q = q.limit(max(1, min(limit, MAX_ACTIONS)))
    return ActionPage(items=[_out(r) for r in db.exec(q)])


class BudgetAction(TypedDict):
    """The budget action on a tree, as `octel why` weighs it: the budget's name, what was used
    and its limit as the action's stored evidence says them, what was done and how it ended."""

    budget: object
    used: object
    unit: object
    limit: object
    action: str
    outcome: str


def budget_action(db: Session, ids: list[str]) -> BudgetAction | None:
    """The budget action on these sessions or the trees they root, for `octel why`: the newest
    that acted (done, gone, notified), else the newest."""
    if not ids:
        return None
    q = select(WatchAction).where(
        col(WatchAction.rule) == "budget",
        or_(col(WatchAction.session_id).in_(ids), col(WatchAction.root_session_id).in_(ids)),
    )
    rows = db.exec(
        q.order_by(col(WatchAction.outcome).in_(("done", "gone", "notified")), col(WatchAction.at))
    ).all()
    if not rows:
        return None
    row = rows[-1]  # one that acted, if any, else the newest
    ev = row.evidence or {}
    return BudgetAction(
        budget=ev.get("budget"),
        used=ev.get("used"),
        unit=ev.get("unit"),
        limit=ev.get("limit"),
        action=row.action,
        outcome=row.outcome,
    )
