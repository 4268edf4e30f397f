"""Trees octel could not archive in full (the `lost_tree` rows), newest first."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel
from sqlmodel import Session, col, func, select

from archiver.errors import WalkErrorDoc
from telemetry.store.lost_models import LostTree

__all__ = ["LostTreePublic", "LostTrees", "count_lost", "list_lost"]


class LostTreePublic(BaseModel):
    server: str
    root_session_id: str
    top_session_id: str
    reason: str  # incomplete, not_written, unseen
    origin: str  # mirror (archived from it, in part), none (nothing to archive)
    sessions: int
    messages: int
    archived: bool
    missing: list[WalkErrorDoc]  # what was lost, as the walk said it
    detected_at: datetime


class LostTrees(BaseModel):
    items: list[LostTreePublic]


def list_lost(db: Session, since: datetime | None = None, limit: int = 50) -> LostTrees:
    q = select(LostTree)
    if since is not None:
        q = q.where(col(LostTree.detected_at) >= since)
    rows = db.exec(q.order_by(col(LostTree.detected_at).desc(), col(LostTree.id).desc()).limit(limit))
    return LostTrees(
        items=[LostTreePublic.model_validate({**r.model_dump(), "missing": r.missing or []}) for r in rows]
    )


def count_lost(db: Session, since: datetime | None = None) -> int:
    q = select(func.count()).select_from(LostTree)
    if since is not None:
        q = q.where(col(LostTree.detected_at) >= since)
    return int(db.exec(q).one())
