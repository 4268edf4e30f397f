"""Which trees to export, and their archive documents and cycle, read from the store."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from archiver.store import ArchiveStore
from telemetry.otel_export.mapping import CycleFacts
from telemetry.queries.turns import open_archive
from telemetry.store.archive_docs import reading_in
from telemetry.store.models import Cycle, SessionIndex
from telemetry.timeutil import as_utc

__all__ = ["LoadedTree", "cycle_of", "load_tree", "select_roots"]


@dataclass
class LoadedTree:
    root_session_id: str
    docs: list[dict[str, Any]] = field(default_factory=list)
    cycle: CycleFacts | None = None
    problems: list[str] = field(default_factory=list)  # archive files gone or unreadable


def select_roots(
    db: Session,
    session_ids: Sequence[str] = (),
    *,
    since: datetime | None = None,
    label: str | None = None,
) -> tuple[list[str], list[str]]:
    """(root session ids to export, ids given that the store does not know), oldest first.

    A subagent id stands for its whole tree: a trace is always a whole tree.
    """
    roots: dict[str, None] = {}
    unknown: list[str] = []
    if session_ids:
        rows = db.exec(select(SessionIndex).where(col(SessionIndex.session_id).in_(list(session_ids)))).all()
        found = {r.session_id: r.root_session_id for r in rows}
        for sid in session_ids:
            if sid in found:
                roots.setdefault(found[sid], None)
            else:
                unknown.append(sid)
    if since is not None or label is not None or not session_ids:
        q = select(SessionIndex.root_session_id, SessionIndex.archived_at)
        if since is not None:
            q = q.where(SessionIndex.archived_at >= since)
        if label is not None:
            q = q.where(SessionIndex.label == label)
        for root, _ in db.exec(q.order_by(col(SessionIndex.archived_at), col(SessionIndex.id))).all():
            roots.setdefault(root, None)
    return list(roots), unknown


def _ms(dt: datetime | None) -> float | None:
    return as_utc(dt).timestamp() * 1000.0 if dt is not None else None


def cycle_of(db: Session, root: str, cycle_id: str | None) -> CycleFacts | None:
    """The cycle the root's index row names, else the newest cycle that names the root session."""
    q = select(Cycle).where(Cycle.cycle_id == cycle_id) if cycle_id else None
    c = db.exec(q).first() if q is not None else None
    if c is None:
        q2 = select(Cycle).where(Cycle.session_id == root).order_by(col(Cycle.started_at).desc())
        c = db.exec(q2).first()
    if c is None:
        return None
    counts = {
        "candidates": c.candidates_count,
        "claims": c.claims_count,
        "swept": c.swept_count,
        "processed": c.processed_count,
        "escalated": c.escalated_count,
    }
    return CycleFacts(
        c.cycle_id, c.driver, _ms(c.started_at) or 0.0, _ms(c.ended_at), counts,
        c.terminal_state, c.worker_outcome, c.error_kind,
    )  # fmt: skip


def load_tree(db: Session, store: ArchiveStore | Path, root: str) -> LoadedTree:
    """The archive documents of every indexed session of a tree, and its cycle."""
    out = LoadedTree(root)
    rows = db.exec(
        select(SessionIndex).where(SessionIndex.root_session_id == root).order_by(col(SessionIndex.depth))
    ).all()
    for row in rows:
        doc, problem = open_archive(reading_in(store, db), row.archive_path)
        if doc is None:
            out.problems.append(problem or f"archive file {row.archive_path} is not readable")
            continue
        out.docs.append(doc)
    top = next((r for r in rows if r.session_id == root), None)
    out.cycle = cycle_of(db, root, top.cycle_id if top is not None else None)
    return out
