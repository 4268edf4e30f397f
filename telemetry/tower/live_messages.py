"""Write the watcher's live messages into the store: each one redacted, then cut to its bound,
upserted by (server, session, message); delete those handed out for deletion, and every
message of the sessions whose tree was archived or forgotten."""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session, col, delete, select

from archiver.redact import Redactor
from telemetry.store.live_models import LiveMessage
from telemetry.timeutil import utcnow
from tower.live_messages import MessageBatch, bound_body

__all__ = ["clear_live_messages", "store_live_messages"]

_CHUNK = 500


def store_live_messages(db: Session, server: str, batch: MessageBatch, *, redactor: Redactor) -> int:
    """Apply one batch; returns how many messages were new."""
    clear_live_messages(db, server, batch.cleared)
    for i in range(0, len(batch.deletes), _CHUNK):
        for sid, mid in batch.deletes[i : i + _CHUNK]:
            db.exec(
                delete(LiveMessage).where(
                    col(LiveMessage.server) == server,
                    col(LiveMessage.session_id) == sid,
                    col(LiveMessage.message_id) == mid,
                )
            )
    latest = {(m.session_id, m.message_id): m for m in batch.upserts}  # the newest of each
    if not latest:
        return 0
    have: dict[tuple[str, str], LiveMessage] = {}
    keys = sorted(latest)
    for i in range(0, len(keys), _CHUNK):
        part = keys[i : i + _CHUNK]
        q = select(LiveMessage).where(
            col(LiveMessage.server) == server,
            col(LiveMessage.session_id).in_({k[0] for k in part}),
            col(LiveMessage.message_id).in_({k[1] for k in part}),
        )
        have.update({(x.session_id, x.message_id): x for x in db.exec(q)})
    now, new = utcnow(), 0
    for key in keys:
        m = latest[key]
        clean, _ = redactor.redact_obj(m.body)  # before the cut: a secret is seen whole
        body, cut = bound_body(clean)
        x = have.get(key)
        if x is None:
            x = LiveMessage(server=server, session_id=m.session_id, message_id=m.message_id, updated_at=now)
            new += 1
        x.position, x.role, x.completed = m.position, m.role, m.completed
        x.cut, x.body, x.updated_at = cut, body, now
        db.add(x)
    return new


def clear_live_messages(db: Session, server: str, session_ids: Iterable[str]) -> int:
    """Delete every live message of these sessions (their tree was archived or forgotten)."""
    ids = list(session_ids)
    n = 0
    for i in range(0, len(ids), _CHUNK):
        stmt = delete(LiveMessage).where(
            col(LiveMessage.server) == server, col(LiveMessage.session_id).in_(ids[i : i + _CHUNK])
        )
        n += db.exec(stmt).rowcount or 0
    return n
