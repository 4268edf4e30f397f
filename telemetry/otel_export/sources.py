"""Which trees to export, and their archive documents and cycle, read from the store.

`load_tree` reads one tree: its index rows, its cycle, its documents. `iter_trees` reads many, as
the export does: the index rows and the cycles of a batch of trees in two queries (two queries
per tree cost more than reading and parsing the tree's archive files), then each tree's documents
when its turn comes, so memory holds one tree's documents at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlmodel import Session, col, select

from archiver.shape import RawJson
from archiver.store import ArchiveStore
from telemetry.otel_export.mapping import CycleFacts
from telemetry.queries.turns import open_archive
from telemetry.store.archive_docs import reading_in
from telemetry.store.models import Cycle, SessionIndex
from telemetry.timeutil import as_utc

__all__ = ["LoadedTree", "cycle_of", "iter_trees", "load_tree", "select_roots"]


@dataclass
class LoadedTree:
    root_session_id: str
    docs: list[RawJson] = field(default_factory=list)  # archive documents, as read back
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


def _facts(c: Cycle) -> CycleFacts:
    counts = {
        "candidates": c.candidates_count,
        "claims": c.claims_count,
        "swept": c.swept_count,
        "processed": c.processed_count,
        "escalated": c.escalated_count,
    }
    return CycleFacts(
        c.cycle_id,
        c.driver,
        _ms(c.started_at) or 0.0,
        _ms(c.ended_at),
        counts,
        c.terminal_state,
        c.worker_outcome,
        c.error_kind,
    )


def cycle_of(db: Session, root: str, cycle_id: str | None) -> CycleFacts | None:
    """The cycle the root's index row names, else the newest cycle that names the root session."""
    q = select(Cycle).where(Cycle.cycle_id == cycle_id) if cycle_id else None
    c = db.exec(q).first() if q is not None else None
    if c is None:
        q2 = select(Cycle).where(Cycle.session_id == root).order_by(col(Cycle.started_at).desc())
        c = db.exec(q2).first()
    return _facts(c) if c is not None else None


def _read_docs(db: Session, store: ArchiveStore | Path, out: LoadedTree, paths: Sequence[str]) -> None:
    reader = reading_in(store, db)
    for path in paths:
        doc, problem = open_archive(reader, path)
        if doc is None:
            out.problems.append(problem or f"archive file {path} is not readable")
            continue
        out.docs.append(doc)


def load_tree(db: Session, store: ArchiveStore | Path, root: str) -> LoadedTree:
    """The archive documents of every indexed session of a tree, and its cycle."""
    out = LoadedTree(root)
    rows = db.exec(
        select(SessionIndex).where(SessionIndex.root_session_id == root).order_by(col(SessionIndex.depth))
    ).all()
    _read_docs(db, store, out, [row.archive_path for row in rows])
    top = next((r for r in rows if r.session_id == root), None)
    out.cycle = cycle_of(db, root, top.cycle_id if top is not None else None)
    return out


def _cycles(db: Session, roots: Sequence[str], named: dict[str, str]) -> dict[str, CycleFacts]:
    """`cycle_of` for each root of a batch: two queries for all of them."""
    by_id: dict[str, Cycle] = {}
    if named:
        q = select(Cycle).where(col(Cycle.cycle_id).in_(list(set(named.values()))))
        by_id = {c.cycle_id: c for c in db.exec(q).all()}
    newest: dict[str, Cycle] = {}
    rest = [r for r in roots if named.get(r) not in by_id]
    if rest:
        q2 = select(Cycle).where(col(Cycle.session_id).in_(rest)).order_by(col(Cycle.started_at).desc())
        for c in db.exec(q2).all():
            newest.setdefault(str(c.session_id), c)
    out: dict[str, CycleFacts] = {}
    for root in roots:
        got = by_id.get(named.get(root, "")) or newest.get(root)
        if got is not None:
            out[root] = _facts(got)
    return out


def iter_trees(
    db: Session, store: ArchiveStore | Path, roots: Sequence[str], batch: int = 100
) -> Iterator[LoadedTree]:
    """`load_tree` of each root in order; the index rows and cycles of ``batch`` trees at a time
    are read in two queries, each tree's documents when it is yielded."""
    for i in range(0, len(roots), batch):
        chunk = list(dict.fromkeys(roots[i : i + batch]))
        q = (
            select(
                SessionIndex.root_session_id,
                SessionIndex.session_id,
                SessionIndex.archive_path,
                SessionIndex.cycle_id,
            )
            .where(col(SessionIndex.root_session_id).in_(chunk))
            .order_by(col(SessionIndex.depth), col(SessionIndex.id))
        )
        paths: dict[str, list[str]] = {}
        named: dict[str, str] = {}
        for root, sid, path, cycle_id in db.exec(q).all():
            paths.setdefault(root, []).append(path)
            if sid == root and cycle_id:
                named[root] = cycle_id
        cycles = _cycles(db, chunk, named)
        for root in roots[i : i + batch]:
            out = LoadedTree(root, cycle=cycles.get(root))
            _read_docs(db, store, out, paths.get(root, []))
            yield out
