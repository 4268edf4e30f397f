"""A live session's messages so far, a page at a time, in the shape of an archive's timeline
(`MessagePage`), read from the rows `octel watch` keeps until the tree is archived."""

from __future__ import annotations

from sqlmodel import Session, col, func, select

from telemetry.queries.models import MessagePage
from telemetry.queries.timeline import message_view
from telemetry.store.live_models import LiveMessage

__all__ = ["LiveMessagePage", "live_message_page"]


class LiveMessagePage(MessagePage):
    """A page of the messages kept so far. ``index`` of each message counts every message the
    watcher saw in the session; ``earlier`` of them are no longer kept (a session keeps its
    newest 200 until its archive holds them all); ``cut`` messages were cut to their bound."""

    server: str
    earlier: int
    cut: list[str]


def live_message_page(
    db: Session, server: str, session_id: str, offset: int | None, limit: int
) -> LiveMessagePage:
    """Messages ``offset`` … ``offset + limit`` of those kept, oldest first; with no offset,
    the newest page (what the session does now)."""
    where = (col(LiveMessage.server) == server, col(LiveMessage.session_id) == session_id)
    total = db.exec(select(func.count()).select_from(LiveMessage).where(*where)).one()
    first = db.exec(select(func.min(LiveMessage.position)).where(*where)).one()
    if offset is None:
        offset = max(0, total - limit)
    q = select(LiveMessage).where(*where).order_by(col(LiveMessage.position), col(LiveMessage.id))
    rows = list(db.exec(q.offset(offset).limit(limit)))
    return LiveMessagePage(
        session_id=session_id,
        server=server,
        total=total,
        offset=offset,
        limit=limit,
        prev_offset=max(0, offset - limit) if offset > 0 else None,
        next_offset=offset + limit if offset + limit < total else None,
        items=[message_view(x.position, x.body or {}) for x in rows],
        redaction={},
        earlier=first or 0,
        cut=[x.message_id for x in rows if x.cut],
    )
