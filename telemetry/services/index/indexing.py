"""Map archive results (``archiver.record.SessionRecord``) into the session index and findings.

One row per session id: archiving a session again updates its row, never adds one. Counters
for /metrics move in the same transaction: ``sessions_archived_total`` for a session seen the
first time, tokens and cost by what a record adds above the highest value ever counted for the
session (``counted_*`` columns), and ``findings_total`` once for each session, source, detector
and verdict (``counted_finding``), however often a finding comes and goes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlmodel import Session, col, delete, select

from archiver.archive import redact_record
from archiver.record import SessionRecord, source_label
from archiver.redact import Redactor
from archiver.versions import opencode_generation
from telemetry.services.index.content_index import enqueue
from telemetry.services.index.index_values import NO_MARKS, IndexValues, UsageMarks
from telemetry.services.spend.spend_links import SHARE_COLUMNS, lock_links, lock_trees, roots_of
from telemetry.store import pg_direct
from telemetry.store.aggregates import bump, coalesced
from telemetry.store.locks import lock_key
from telemetry.store.models import CountedFinding, Finding, SessionIndex
from telemetry.store.spend import Share, apply, driver_of, share_of
from telemetry.store.tree_rollup import refresh_trees
from telemetry.timeutil import utcnow

__all__ = ["IndexStats", "index_records", "record_findings", "written_redacted"]


@dataclass
class IndexStats:
    new: int = 0
    updated: int = 0
    findings_new: int = 0

    def add(self, other: IndexStats) -> None:
        self.new += other.new
        self.updated += other.updated
        self.findings_new += other.findings_new


def _from_ms(ms: float | None) -> datetime | None:
    return datetime.fromtimestamp(ms / 1000.0, UTC) if ms is not None else None


def _parse_iso(text: str) -> datetime:
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return utcnow()
    # in UTC: SQLite keeps a time's wall clock, whatever its offset, and octel reads it as UTC
    return dt.astimezone(UTC) if dt.tzinfo else dt.replace(tzinfo=UTC)


def _fields(r: SessionRecord, cycle_id: str | None, marks: UsageMarks) -> IndexValues:
    out: IndexValues = {
        "session_id": r.session_id,
        "root_session_id": r.root_session_id,
        "parent_session_id": r.parent_session_id,
        "depth": r.depth,
        "label": r.label,
        "agent": r.agent,
        "model": r.model,
        "title": (r.title or "")[:1000] or None,
        "directory": (r.directory or "")[:1000] or None,
        "opencode_version": r.opencode_version,
        "created_at": _from_ms(r.created_ms),
        "updated_at": _from_ms(r.updated_ms),
        "archived_at": _parse_iso(r.archived_at),
        "duration_s": r.duration_s,
        "turn_count": r.turn_count,
        "message_count": r.message_count,
        "in_flight": r.in_flight,
        "tokens_input": r.tokens_input,
        "tokens_output": r.tokens_output,
        "tokens_reasoning": r.tokens_reasoning,
        "tokens_cache_read": r.tokens_cache_read,
        "tokens_cache_write": r.tokens_cache_write,
        "cost_usd": r.cost_usd,
        "subtree_tokens": r.subtree_tokens,
        "subtree_cost_usd": r.subtree_cost_usd,
        "subtree_session_count": r.subtree_session_count,
        "verdict": r.verdict,
        "worst_detector": r.worst_detector,
        "finding_count": r.finding_count,
        "walk_error_count": r.walk_error_count,
        "error_kind": r.error_kind,
        "archive_path": r.archive_path,
        "schema_version": r.schema_version,
        "content_hash": r.content_hash,
        "source": r.source,
        "reported_cost_usd": r.reported_cost_usd,
        "cost_mismatch": r.cost_mismatch,
        "unpriced_models": r.unpriced_models,
        "counted_tokens_input": marks["counted_tokens_input"],
        "counted_tokens_output": marks["counted_tokens_output"],
        "counted_tokens_reasoning": marks["counted_tokens_reasoning"],
        "counted_tokens_cache_read": marks["counted_tokens_cache_read"],
        "counted_tokens_cache_write": marks["counted_tokens_cache_write"],
        "counted_cost_usd": marks["counted_cost_usd"],
    }
    if cycle_id is not None:
        out["cycle_id"] = cycle_id
    return out


def _bump_generation(db: Session, source: str | None, schema_version: int, version: str | None) -> None:
    gen = opencode_generation(source, schema_version, version)
    if gen is not None:
        bump(db, "opencode_sessions_archived_total", {"generation": str(gen)}, 1)


def _bump_usage(db: Session, r: SessionRecord, old: UsageMarks | None) -> UsageMarks:
    """Bump the usage counters by what this record adds above the highest value ever counted
    for the session (`old`, the marks of its row; a lower reading, then a higher one again,
    never counts twice); returns the new high-water marks."""
    labels = {"agent": r.agent or "", "model": r.model or "", "source": source_label(r.source)}

    def tokens(kind: str, new_v: int, counted: int) -> int:
        if new_v > counted:
            bump(db, "session_tokens_total", {**labels, "kind": kind}, new_v - counted)
        return max(new_v, counted)

    was = old if old is not None else NO_MARKS
    counted_cost = was["counted_cost_usd"]
    # the kinds in `TOKEN_KINDS` order, as the counters were always bumped
    marks: UsageMarks = {
        "counted_tokens_input": tokens("input", r.tokens_input, was["counted_tokens_input"]),
        "counted_tokens_output": tokens("output", r.tokens_output, was["counted_tokens_output"]),
        "counted_tokens_reasoning": tokens("reasoning", r.tokens_reasoning, was["counted_tokens_reasoning"]),
        "counted_tokens_cache_read": tokens(
            "cache_read", r.tokens_cache_read, was["counted_tokens_cache_read"]
        ),
        "counted_tokens_cache_write": tokens(
            "cache_write", r.tokens_cache_write, was["counted_tokens_cache_write"]
        ),
        "counted_cost_usd": max(r.cost_usd, counted_cost),
    }
    if r.cost_usd > counted_cost:
        bump(db, "session_cost_usd_total", labels, r.cost_usd - counted_cost)
    return marks


def _marks_of(row: SessionIndex) -> UsageMarks:
    """The high-water marks a stored row holds."""
    return {
        "counted_tokens_input": row.counted_tokens_input,
        "counted_tokens_output": row.counted_tokens_output,
        "counted_tokens_reasoning": row.counted_tokens_reasoning,
        "counted_tokens_cache_read": row.counted_tokens_cache_read,
        "counted_tokens_cache_write": row.counted_tokens_cache_write,
        "counted_cost_usd": row.counted_cost_usd,
    }


def record_findings(
    db: Session,
    session_id: str,
    findings: Iterable[Mapping[str, Any]],
    *,
    redactor: Redactor,
    source: str = "archive",
    replace: bool = True,
) -> int:
    """Upsert findings of one session from one source; returns how many are new. With
    ``replace``, that source's findings no longer reported are removed.

    Every finding is redacted here, whatever its source: live-probe evidence quotes tool
    calls, which may hold secrets."""
    findings, _ = redactor.redact_obj([dict(f) for f in findings])
    now = utcnow()
    existing = {
        f.detector: f
        for f in db.exec(select(Finding).where(Finding.session_id == session_id, Finding.source == source))
    }
    counted = {
        (c.detector, c.verdict)
        for c in db.exec(
            select(CountedFinding).where(
                CountedFinding.session_id == session_id, CountedFinding.source == source
            )
        )
    }
    seen: set[str] = set()
    new = 0
    for f in findings:
        detector = str(f.get("detector") or "")
        if not detector or detector in seen:
            continue
        seen.add(detector)
        verdict = str(f.get("verdict") or "healthy")
        row = existing.get(detector)
        if row is None:
            row = Finding(
                session_id=session_id, detector=detector, source=source, verdict=verdict, detected_at=now
            )
            new += 1
        if (detector, verdict) not in counted:
            counted.add((detector, verdict))
            db.add(CountedFinding(session_id=session_id, source=source, detector=detector, verdict=verdict))
            bump(db, "findings_total", {"detector": detector, "verdict": verdict}, 1)
        row.verdict = verdict
        row.score = float(f.get("score") or 0.0)
        row.start_index = int(f.get("start_index") or 0)
        ev = f.get("evidence")
        row.evidence = dict(ev) if isinstance(ev, Mapping) else None
        db.add(row)
    if replace:
        stale = [d for d in existing if d not in seen]
        if stale:
            db.exec(
                delete(Finding).where(
                    col(Finding.session_id) == session_id,
                    col(Finding.source) == source,
                    col(Finding.detector).in_(stale),
                )
            )
    return new


def index_records(
    db: Session,
    records: Iterable[SessionRecord],
    *,
    redactor: Redactor,
    cycle_id: str | None = None,
    written: Collection[str] = (),
) -> IndexStats:
    """Insert or update one index row per record, with counters and findings; every free-text
    field is redacted (again, for records read from files an older version wrote). `written`:
    the archive names among theirs that octel wrote redacted itself just now (a tree's
    `ArchiveResult.written`), whose text the search catch-up need not redact again."""
    # `session_index` grows in bursts (an import, a fleet's first hours); plans kept from when
    # it was young scanned it whole, 16 times for a tree of 4, until ANALYZE ran on it
    with pg_direct.planned_as_run(db.connection()):
        return _index_records(db, records, redactor=redactor, cycle_id=cycle_id, written=written)


def _index_records(
    db: Session,
    records: Iterable[SessionRecord],
    *,
    redactor: Redactor,
    cycle_id: str | None,
    written: Collection[str],
) -> IndexStats:
    stats = IndexStats()
    recs = [redact_record(rec, redactor) for rec in records]
    for sid in sorted({r.session_id for r in recs}):  # one order for every writer
        lock_key(db, "session", sid)
    sids = {r.session_id for r in recs}
    # the roots its rows name now: no other writer changes them while it holds `session:`
    was = roots_of(db, sids)
    lock_links(db, [cycle_id, *was, *(v for r in recs for v in (r.session_id, r.root_session_id, r.label))])
    lock_trees(db, [*was, *(v for r in recs for v in (r.session_id, r.root_session_id))])
    added: list[Share] = []
    removed: list[Share] = []
    # existing rows locked in one statement, by id, as every writer of the summary locks them,
    # and read as committed even when this session loaded them before
    stmt = select(SessionIndex).where(col(SessionIndex.session_id).in_({r.session_id for r in recs}))
    stmt = stmt.order_by(col(SessionIndex.id)).with_for_update().execution_options(populate_existing=True)
    rows = {o.session_id: o for o in db.exec(stmt)}
    trees = {v for r in recs for v in (r.session_id, r.root_session_id)}  # and the old roots
    # counters written once, in one order for every writer (as the bulk indexer does), so
    # two writers of sessions with the same labels queue instead of deadlocking; the summary
    # moves before them (at the block's end), as in every writer: `spend_day` rows, then counters
    with coalesced(db):
        for r in recs:
            old = rows.get(r.session_id)
            values = _fields(r, cycle_id, _bump_usage(db, r, _marks_of(old) if old is not None else None))
            if old is not None:
                removed.append(share_of({c: getattr(old, c) for c in SHARE_COLUMNS}))
                trees.add(old.root_session_id)
                values.setdefault("cycle_id", old.cycle_id)
            values["driver"] = driver_of(db, values)
            added.append(share_of(values))
            if old is None:
                rows[r.session_id] = SessionIndex(**values)
                db.add(rows[r.session_id])
                stats.new += 1
                labels = {"agent": r.agent or "", "source": source_label(r.source)}
                bump(db, "sessions_archived_total", labels, 1)
                _bump_generation(db, r.source, r.schema_version, r.opencode_version)
            else:
                for k, v in values.items():
                    setattr(old, k, v)
                db.add(old)
                stats.updated += 1
            stats.findings_new += record_findings(db, r.session_id, r.findings, redactor=redactor)
        # the summary and the trees before the counters, as the bulk indexer and a cycle's
        # finish write them: writers that took them in opposite orders deadlocked
        db.flush()
        refresh_trees(db, trees)
        apply(db, added, removed)  # `spend_day` after every index row, as every writer
    # the search catch-up reads their text later
    enqueue(db, [r.session_id for r in recs], redacted=written_redacted(recs, written))
    return stats


def written_redacted(records: Sequence[SessionRecord], written: Collection[str]) -> set[str]:
    """The sessions whose record (the last of each) names a document octel wrote redacted."""
    names, last = set(written), {r.session_id: r.archive_path for r in records}
    return {sid for sid, path in last.items() if path in names}
