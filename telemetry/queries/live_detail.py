"""One live session and its tree so far, the one model `GET /api/live/{id}` answers and
`octel sessions show|tree ID --json` print for a session that runs now."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlmodel import Session

from telemetry.queries.live import LiveSessionOut, get_live, live_tree, mark_archived
from telemetry.queries.live_messages import LiveMessagePage

__all__ = ["LiveDetail", "LiveSessionShown", "LiveTreeNode", "live_detail"]


class LiveTreeNode(BaseModel):
    depth: int
    session: LiveSessionOut


class LiveDetail(BaseModel):
    live: LiveSessionOut
    tree: list[LiveTreeNode]


class LiveSessionShown(LiveDetail):
    """`octel sessions show ID --json` of a live session: its detail and its messages so far
    (which the API serves apart, at `/api/live/{id}/messages`)."""

    messages: LiveMessagePage


def live_detail(db: Session, session_id: str, now: datetime) -> LiveDetail | None:
    """The live session and its tree (parents before children); None when it is not live."""
    me = get_live(db, session_id, now)
    if me is None:
        return None
    tree = [LiveTreeNode(depth=d, session=r) for d, r in live_tree(db, session_id, now)]
    # every row says whether an archive exists too, as the list of live sessions says it
    mark_archived(db, [me, *(n.session for n in tree)])
    return LiveDetail(live=me, tree=tree)
