"""Archive a tree deleted before the server could be read, from the watcher's mirror, and say
so when anything of it is lost: a log line, a `lost_tree` row and `octel_trees_lost_total`.

The archive goes through the same public write function as every other watcher archive
(``archive``, passed in: ``telemetry.archiving.archive_session_tree_async``), so it is
redacted, validated, read back and indexed the same way; its documents say
``source.origin = "mirror"`` and list what the mirror lacked as walk errors.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from archiver.archive import ArchiveResult
from archiver.cut import cut
from archiver.errors import WalkErrorDoc
from archiver.redact import Redactor
from archiver.walk import TreeSnapshot
from telemetry.store.aggregates import bump
from telemetry.store.db import session_scope
from telemetry.store.lost_models import LOST_REASONS, LostTree
from telemetry.timeutil import utcnow
from tower.watch import WatchConfig

__all__ = ["archive_from_mirror", "record_lost", "root_gone", "with_mirror"]

_MAX_MISSING = 50  # rows say what was lost; a tree with thousands of gaps keeps the first few


def with_mirror(config: WatchConfig, data_dir: Path, budget: int, url: str) -> WatchConfig:
    """The watch configuration with its mirror folder: one per server, as several are followed
    at once by one process, and per process, as a watcher standing by mirrors the same server
    as the one holding its lease."""
    if config.mirror_dir is not None:
        return config
    folder = data_dir / "mirror" / hashlib.sha256(url.encode()).hexdigest()[:16] / str(os.getpid())
    return dataclasses.replace(config, mirror_dir=folder, mirror_budget_bytes=budget)


def root_gone(result: ArchiveResult | None) -> bool:
    """The server no longer has the root: the walk found nothing and was told 404."""
    return (
        result is not None
        and result.sessions_found == 0
        and any(e.get("error_kind") == "not_found" for e in result.walk_errors)
    )


def record_lost(
    db: Session,
    *,
    server: str,
    root: str,
    top: str,
    reason: str,
    origin: str,
    missing: Sequence[WalkErrorDoc],
    redactor: Redactor,
    sessions: int = 0,
    messages: int = 0,
    archived: bool = False,
) -> LostTree:
    """One lost-tree row and its counter, in the caller's transaction."""
    if reason not in LOST_REASONS:
        raise ValueError(f"reason: {reason!r} is not one of {', '.join(LOST_REASONS)}")
    kept, _ = redactor.redact_obj({"server": server, "missing": list(missing[:_MAX_MISSING])})
    row = LostTree(
        server=cut(kept["server"], 500),
        root_session_id=root[:200],
        top_session_id=top[:200],
        reason=reason,
        origin=origin,
        sessions=sessions,
        messages=messages,
        archived=archived,
        missing=kept["missing"],
        detected_at=utcnow(),
    )
    db.add(row)
    bump(db, "trees_lost_total", {"reason": reason}, 1)
    return row


async def archive_from_mirror(
    top: str,
    snap: TreeSnapshot,
    status: Mapping[str, Sequence[Mapping[str, Any]]],
    perms: Mapping[str, Sequence[Mapping[str, Any]]],
    *,
    archive: Callable[..., Awaitable[Any]],
    engine: Engine,
    redactor: Redactor,
    server: str,
    log: Callable[[str], None],
    **archive_kw: Any,
) -> Any:
    """Archive ``snap`` (a deleted subtree under ``top``, folded from events) and index it;
    record a lost tree unless every session was written complete. Returns the outcome."""
    root = snap.root_id
    messages = sum(len(s.messages) for s in snap.sessions)
    if not any(s.session is not None and s.messages for s in snap.sessions):
        missing = [e.to_dict() for e in snap.walk_errors] or [
            {
                "error_kind": "truncated",
                "what": "messages",
                "session_id": top,
                "path": "/event",
                "status": None,
                "message": "deleted before any of its messages reached the watcher",
            }
        ]
        with session_scope(engine) as db:
            record_lost(
                db,
                server=server,
                root=root,
                top=top,
                reason="unseen",
                origin="none",
                missing=missing,
                redactor=redactor,
                sessions=len(snap.sessions),
            )
        log(f"LOST {top} (tree {root}): deleted before any of its messages were seen; nothing archived")
        return None
    out = await archive(
        root, tree=snap, engine=engine, status_history=status, permission_events=perms, **archive_kw
    )
    res: ArchiveResult | None = out.result
    if out.ok:
        log(
            f"archived {top} (tree {root}) from the mirror: {len(snap.sessions)} sessions, "
            f"{messages} messages, complete (deleted before the server could be read)"
        )
        return out
    written = res is not None and bool(res.records)
    missing = list(res.walk_errors if res else [])
    for m in (res.write_errors if res else []) + out.errors:
        missing.append(
            {
                "error_kind": "write",
                "what": "archive",
                "session_id": None,
                "path": "",
                "status": None,
                "message": m,
            }
        )
    reason = "incomplete" if written and not (res and res.write_errors) and not out.errors else "not_written"
    with session_scope(engine) as db:
        record_lost(
            db,
            server=server,
            root=root,
            top=top,
            reason=reason,
            origin="mirror",
            missing=missing,
            redactor=redactor,
            sessions=len(snap.sessions),
            messages=messages,
            archived=written,
        )
    what = "; ".join(str(m.get("message")) for m in missing[:3])
    log(f"LOST part of {top} (tree {root}): archived from the mirror {reason}: {what}")
    return out
