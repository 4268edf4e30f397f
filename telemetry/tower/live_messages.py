"""Write the watcher's live messages into the store: each one redacted, then cut to its bound,
upserted by (server, session, message); delete those handed out for deletion, and every
message of the sessions whose tree was archived or forgotten. Each message's searchable parts
go into the content index with it (`put_live_parts`) and leave with it: a live session is
found by what its agents say as they say it."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import delete
from sqlmodel import Session, col, select

from archiver.redact import Redactor
from telemetry.services.index.content_index import put_live_parts, remove_live_parts
from telemetry.store.live_models import LiveMessage
from telemetry.timeutil import utcnow
from tower.live_messages import MessageBatch, bound_body

__all__ = ["clear_live_messages", "store_live_messages"]

_CHUNK = 500
_LM = LiveMessage.__table__  # type: ignore[attr-defined]


def store_live_messages(db: Session, server: str, batch: MessageBatch, *, redactor: Redactor) -> int:
    """Apply one batch; returns how many messages were new."""
    clear_live_messages(db, server, batch.cleared)
    gone: list[int] = []
    for sid, mid in batch.deletes:
        stmt = delete(_LM).where(_LM.c.server == server, _LM.c.session_id == sid, _LM.c.message_id == mid)
        gone += [int(r[0]) for r in db.connection().execute(stmt.returning(_LM.c.id))]
    remove_live_parts(db, gone)
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
    written: list[LiveMessage] = []
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
        written.append(x)
    db.flush()  # the new rows' ids, which their parts name
    put_live_parts(db, [(int(x.id or 0), x.session_id, x.position, x.body or {}) for x in written])
    return new


def clear_live_messages(db: Session, server: str, session_ids: Iterable[str]) -> int:
    """Delete every live message of these sessions (their tree was archived or forgotten)."""
    ids = list(session_ids)
    gone: list[int] = []
    for i in range(0, len(ids), _CHUNK):
        stmt = delete(_LM).where(_LM.c.server == server, _LM.c.session_id.in_(ids[i : i + _CHUNK]))
        gone += [int(r[0]) for r in db.connection().execute(stmt.returning(_LM.c.id))]
    remove_live_parts(db, gone)  # an archived tree's text is the archive's now (`search_catchup`)
    return len(gone)
