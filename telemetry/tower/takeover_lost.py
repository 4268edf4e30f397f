"""What a watcher that takes a server over learns from the dead holder's live rows: a tree that
the dead one followed and did not archive, which the server deleted before this watcher could
read it or see any of its events, cannot be archived by anyone. It is said as lost (``unseen``,
with what the store still held of it), not dropped in silence, and its stale live rows go."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from archiver.errors import WalkErrorDoc
from archiver.redact import Redactor
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveMessage, LiveSession
from telemetry.store.lost_models import LostTree
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc
from telemetry.tower.live import forget_live
from telemetry.tower.lost import record_lost

__all__ = ["record_unseen", "unseen_trees"]

_OLDER = (
    "changed after its archive and deleted on the server after the watcher that followed it died, "
    "before the one that took over could read it; the archive holds it as it was before"
)
_WHY = (
    "deleted on the server after the watcher that followed it died and before the one that "
    "took over could read it or see any of its events; only the dead watcher's live rows or "
    "journal named it"
)


def unseen_trees(
    engine: Engine,
    server: str,
    known: Collection[str],
    began: datetime | None,
    journal: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, list[str]]:
    """The trees (root: its sessions) the live rows of ``server`` name that are not among
    ``known`` (sessions the server lists or this watcher's mirror holds), no archive holds as
    they last moved, no lost row names yet, and that moved since ``began`` (the dead holder's
    start: a tree quiet since before was not its to archive). The dead holder's ``journal``
    (``tower.seen``: root: sessions) names the trees it heard of last, before their rows were
    written."""
    with session_scope(engine, write=False) as db:
        rows = db.exec(select(LiveSession).where(col(LiveSession.server) == server)).all()
        trees: dict[str, list[LiveSession]] = {}
        for r in rows:
            trees.setdefault(r.root_session_id or r.session_id, []).append(r)
        since = as_utc(began) if began is not None else None
        out = {
            root: [m.session_id for m in members]
            for root, members in trees.items()
            if root not in known
            and not any(m.session_id in known for m in members)
            and (since is None or max(_moved(m) for m in members) >= since)
        }
        for root, sids in (journal or {}).items():
            if root in known or any(x in known for x in sids) or (root in trees and root not in out):
                continue
            out[root] = sorted(set(out.get(root, [])) | set(sids))
        ids = sorted(out)
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            q = select(SessionIndex.session_id, SessionIndex.archived_at)
            done = {
                r
                for r, at in db.exec(q.where(col(SessionIndex.session_id).in_(chunk)))
                if _kept(at, trees.get(r, []))
            }
            q2 = select(LostTree.root_session_id).where(
                col(LostTree.server) == server, col(LostTree.root_session_id).in_(chunk)
            )
            done |= set(db.exec(q2))
            for root in done:
                out.pop(root, None)
    return out


def _kept(archived_at: datetime, members: Sequence[LiveSession]) -> bool:
    """The archive was taken after the last activity the live rows saw of the tree."""
    seen = [as_utc(m.last_activity_at) for m in members if m.last_activity_at is not None]
    return not seen or as_utc(archived_at) >= max(seen)


def record_unseen(
    engine: Engine,
    server: str,
    trees: Mapping[str, Sequence[str]],
    *,
    redactor: Redactor,
    log: Callable[[str], None] = lambda _m: None,
) -> None:
    """A lost row for each tree (root: its sessions) the server no longer has, with how much of
    it the store still held: ``unseen``, or ``incomplete`` when an archive holds it as it was
    before its last turns; their live rows go (gone from the server)."""
    for root, sids in trees.items():
        with session_scope(engine) as db:
            q = select(func.count()).select_from(LiveMessage)
            q = q.where(col(LiveMessage.server) == server, col(LiveMessage.session_id).in_(list(sids)))
            kept = int(db.exec(q).one())
            older = db.exec(
                select(SessionIndex.session_id).where(col(SessionIndex.session_id) == root)
            ).first()
            why = _OLDER if older is not None else _WHY
            missing: list[WalkErrorDoc] = [
                {
                    "error_kind": "not_found",
                    "what": "tree",
                    "session_id": root,
                    "path": f"/session/{root}",
                    "status": 404,
                    "message": f"{why} ({len(sids)} sessions, {kept} live messages)",
                }
            ]
            record_lost(
                db,
                reason="unseen" if older is None else "incomplete",
                archived=older is not None,
                missing=missing,
                redactor=redactor,
                sessions=len(sids),
                server=server,
                root=root,
                top=root,
                origin="none",
            )
            forget_live(db, server, sids)  # not on the live board any more
        what = "its last turns not archived" if older is not None else "nothing archived"
        log(f"LOST {root} (tree {root}): deleted while nobody followed {server}; {what}")


def _moved(row: LiveSession) -> datetime:
    return as_utc(row.last_activity_at or row.state_since)
