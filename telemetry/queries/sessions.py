"""Session queries: the newest-archived-first list, one session with its findings, the subtree.

The list is keyset-paged on (archived_at, id) and walks one of the `(column, archived_at, id)`
indexes of `session_index` in order, so a filtered page never sorts. Root only has no index
of its own and is written so no single-column index can serve it: the planner then has no
cheaper plan than the ordered index walk that stops after one page. A text search walks the
same way for a bounded number of rows, then asks the text index (`session_search`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, get_args

from sqlalchemy import and_, func, or_
from sqlmodel import Session, col, select

from archiver.metrics import TOKEN_KINDS, cache_hit_ratio
from archiver.versions import opencode_generation
from telemetry.queries.paging import decode_cursor, encode_cursor
from telemetry.queries.session_models import SessionPage, SessionRecord, SessionVerdict, stored_tokens
from telemetry.store.session_index import SessionIndex
from telemetry.timeutil import as_utc

# The list reads the index alone: the other tables are defined when a session's findings are.
if TYPE_CHECKING:
    from telemetry.queries.models import FindingRecord, LinkedCycle, TreeNode
    from telemetry.store.models import Finding

__all__ = [
    "MAX_LIMIT",
    "SESSION_VERDICTS",
    "SessionFilter",
    "StoredSession",
    "archive_path_of",
    "finding_record",
    "get_session",
    "list_sessions",
    "one_per_pattern",
    "session_record",
    "session_tree",
]

MAX_LIMIT = 500
# A session's verdict: the detectors' worst, or "empty" when it has no turn to judge.
SESSION_VERDICTS: tuple[str, ...] = get_args(SessionVerdict)

# Equality filters, each served by an index on (column, archived_at, id).
_EQUALITY = ("agent", "model", "verdict", "label", "source")


@dataclass(frozen=True, slots=True)
class SessionFilter:
    agent: str | None = None
    model: str | None = None
    verdict: str | None = None
    label: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    q: str | None = None  # substring of title or label, case-insensitive on ASCII
    root_only: bool = False
    limit: int = 50
    cursor: str | None = None
    source: str | None = None  # opencode or claude_code


@dataclass(frozen=True, slots=True)
class StoredSession:
    """What the store holds of one session (`get_session`): the parts of its detail page
    that need no archive."""

    session: SessionRecord
    cycle: LinkedCycle | None
    parent_session_id: str | None
    root_session_id: str
    findings: list[FindingRecord]
    tree: TreeNode


def _iso(dt: datetime | None) -> str | None:
    return as_utc(dt).isoformat() if dt is not None else None


def session_record(s: SessionIndex) -> SessionRecord:
    """One index row as the record every session query returns."""
    tokens = stored_tokens(s)
    return SessionRecord.model_validate(
        {
            "session_id": s.session_id,
            "root_session_id": s.root_session_id,
            "parent_session_id": s.parent_session_id,
            "depth": s.depth,
            "label": s.label,
            "cycle_id": s.cycle_id,
            "agent": s.agent,
            "model": s.model,
            "title": s.title,
            "directory": s.directory,
            "opencode_version": s.opencode_version,
            "opencode_generation": opencode_generation(s.source, s.schema_version, s.opencode_version),
            "created_at": _iso(s.created_at),
            "updated_at": _iso(s.updated_at),
            "archived_at": _iso(s.archived_at),
            "duration_s": s.duration_s,
            "turn_count": s.turn_count,
            "message_count": s.message_count,
            "in_flight": s.in_flight,
            "tokens": tokens,
            "tokens_total": sum(tokens.values()),
            "cache_hit_ratio": cache_hit_ratio(s.tokens_cache_read, s.tokens_input),
            "cost_usd": s.cost_usd,
            "subtree_tokens": s.subtree_tokens,
            "subtree_cost_usd": s.subtree_cost_usd,
            "subtree_session_count": s.subtree_session_count,
            "verdict": s.verdict,
            "worst_detector": s.worst_detector,
            "finding_count": s.finding_count,
            "walk_error_count": s.walk_error_count,
            "error_kind": s.error_kind,
            "archive_path": s.archive_path,
            "schema_version": s.schema_version,
            "source": s.source,
            "reported_cost_usd": s.reported_cost_usd,
            "cost_mismatch": s.cost_mismatch,
            "unpriced_models": s.unpriced_models.split(",") if s.unpriced_models else [],
        }
    )


def one_per_pattern(findings: Sequence[Finding]) -> list[Finding]:
    """One finding per detector: the archive's, which judged the whole session, supersedes
    the live probe's of the same pattern made while it ran (order kept)."""
    archived = {f.detector for f in findings if f.source != "live"}
    return [f for f in findings if f.source != "live" or f.detector not in archived]


def finding_record(f: Finding) -> FindingRecord:
    """A stored finding as the answers show it (no sentence yet: `finding_text` adds it)."""
    from telemetry.queries.models import FindingRecord

    return FindingRecord.model_validate(
        {
            "detector": f.detector,
            "verdict": f.verdict,
            "score": f.score,
            "start_index": f.start_index,
            "evidence": f.evidence,
            "source": f.source,
            "detected_at": _iso(f.detected_at),
        }
    )


def _filters(f: SessionFilter) -> list[Any]:
    """Every condition of `f` but the text: equality, window, roots only, the cursor."""
    conds: list[Any] = [
        getattr(SessionIndex, n) == getattr(f, n) for n in _EQUALITY if getattr(f, n) is not None
    ]
    archived, rid = col(SessionIndex.archived_at), col(SessionIndex.id)
    if f.since is not None:
        conds.append(archived >= f.since)
    if f.until is not None:
        conds.append(archived < f.until)
    if f.root_only:
        # Not `parent_session_id IS NULL`: its own index would win and the page would be sorted.
        conds.append(func.coalesce(col(SessionIndex.parent_session_id), "") == "")
    if f.cursor:
        at, row_id = decode_cursor(f.cursor)
        conds.append(or_(archived < at, and_(archived == at, rid < row_id)))
    return conds


def list_sessions(db: Session, f: SessionFilter) -> SessionPage:
    """A page of sessions, newest archived first; every filter and the page run in the database."""
    limit = max(1, min(f.limit, MAX_LIMIT))
    conds = _filters(f)
    if f.q:
        from telemetry.queries.session_search import search_page  # its SQL is built on first use

        rows = search_page(db, conds, f.q, limit + 1)
    else:
        stmt = select(SessionIndex).where(*conds)
        order = (col(SessionIndex.archived_at).desc(), col(SessionIndex.id).desc())
        rows = list(db.exec(stmt.order_by(*order).limit(limit + 1)).all())
    more = len(rows) > limit
    rows = rows[:limit]
    nxt = encode_cursor(rows[-1].archived_at, rows[-1].id or 0) if more and rows else None
    return SessionPage(items=[session_record(r) for r in rows], next_cursor=nxt)


def _find(db: Session, session_id: str) -> SessionIndex | None:
    return db.exec(select(SessionIndex).where(SessionIndex.session_id == session_id)).first()


def archive_path_of(db: Session, session_id: str) -> str | None:
    """The archive path the index holds for a session; None for an unknown session."""
    stmt = select(SessionIndex.archive_path).where(SessionIndex.session_id == session_id)
    return db.exec(stmt).first()


def _build_tree(top: SessionIndex, rows: Iterable[SessionIndex]) -> TreeNode:
    """Nest `rows` under `top` by parent links and roll cost and tokens up explicitly.

    Own numbers stay own (OpenCode's session cost excludes its children); the subtree numbers
    are sums over the indexed descendants. Parent links that loop are cut at the first repeat.
    """
    from telemetry.queries.models import Tokens, TreeNode

    children: dict[str, list[SessionIndex]] = {}
    for r in rows:
        if r.parent_session_id is not None and r.session_id != top.session_id:
            children.setdefault(r.parent_session_id, []).append(r)
    seen: set[str] = set()

    def build(s: SessionIndex) -> TreeNode:
        seen.add(s.session_id)
        kids = sorted(children.get(s.session_id, []), key=lambda c: (_iso(c.created_at) or "", c.session_id))
        nodes = [build(c) for c in kids if c.session_id not in seen]
        tokens = stored_tokens(s)
        sub_tokens = {k: tokens[k] + sum(getattr(c.subtree_tokens, k) for c in nodes) for k in TOKEN_KINDS}
        return TreeNode.model_validate(
            {
                "session_id": s.session_id,
                "parent_session_id": s.parent_session_id,
                "depth": s.depth,
                "agent": s.agent,
                "model": s.model,
                "title": s.title,
                "verdict": s.verdict,
                "in_flight": s.in_flight,
                "turn_count": s.turn_count,
                "cost_usd": s.cost_usd,
                "tokens": Tokens(**tokens),
                "tokens_total": sum(tokens.values()),
                "children": nodes,
                "subtree_cost_usd": s.cost_usd + sum(c.subtree_cost_usd for c in nodes),
                "subtree_tokens": Tokens(**sub_tokens),
                "subtree_tokens_total": sum(sub_tokens.values()),
                "subtree_session_count": 1 + sum(c.subtree_session_count for c in nodes),
            }
        )

    return build(top)


def session_tree(db: Session, session_id: str) -> TreeNode | None:
    """The subtree rooted at a session, nested, with own and rolled-up cost and tokens."""
    top = _find(db, session_id)
    if top is None:
        return None
    rows = db.exec(select(SessionIndex).where(SessionIndex.root_session_id == top.root_session_id)).all()
    return _build_tree(top, rows)


def get_session(db: Session, session_id: str) -> StoredSession | None:
    """The index record, its findings, its subtree, its parent and root ids, and its cycle."""
    from telemetry.queries.cycles import cycle_dict, linked_cycle  # the list does not need them
    from telemetry.queries.models import LinkedCycle
    from telemetry.store.models import Finding

    s = _find(db, session_id)
    if s is None:
        return None
    findings = db.exec(
        select(Finding)
        .where(Finding.session_id == session_id)
        .order_by(col(Finding.detected_at), col(Finding.id))
    ).all()
    rows = db.exec(select(SessionIndex).where(SessionIndex.root_session_id == s.root_session_id)).all()
    cycle = linked_cycle(db, s.session_id, s.root_session_id, s.cycle_id, s.label)
    record = session_record(s)
    if cycle is not None:
        record = record.model_copy(update={"cycle_id": cycle.cycle_id})
    return StoredSession(
        session=record,
        cycle=LinkedCycle.model_validate(cycle_dict(cycle)) if cycle is not None else None,
        parent_session_id=s.parent_session_id,
        root_session_id=s.root_session_id,
        findings=[finding_record(x) for x in one_per_pattern(findings)],
        tree=_build_tree(s, rows),
    )
