"""Index many archived sessions in one transaction: the bulk path of an import.

The same rows and counters as ``indexing.index_records`` (one row per session id, usage
counted above its high-water marks, each (session, detector, verdict) counted once), written
with a few statements per batch instead of several per session: the rows of the batch's
sessions and their findings are read in one query each, and the inserts, updates and deletes
go out as executemany. Each counter is written once, after the daily spend summary (the order
every writer takes them in, ``spend_links``), at the end of the batch or of the caller's
``aggregates.coalesced`` block.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlmodel import Session

from archiver.archive import redact_record
from archiver.record import SessionRecord, source_label
from archiver.redact import Redactor
from archiver.versions import opencode_generation
from telemetry.services.index.content_index import enqueue
from telemetry.services.index.index_values import CountedValues, FindingValues, IndexValues, UsageMarks
from telemetry.services.index.indexing import IndexStats, _bump_usage, _fields, written_redacted
from telemetry.services.spend.spend_links import (
    SHARE_COLUMNS,
    lock_links,
    lock_trees,
    roots_of,
    rows_for_update,
    shares,
)
from telemetry.store import pg_direct
from telemetry.store.aggregates import bump, coalesced
from telemetry.store.locks import lock_key
from telemetry.store.models import CountedFinding, Finding, SessionIndex
from telemetry.store.session_index import IndexRow
from telemetry.store.spend import apply, drivers_of
from telemetry.store.tree_rollup import refresh_trees
from telemetry.timeutil import utcnow

__all__ = ["BatchIndexed", "index_batch"]

_SOURCE = "archive"
_CHUNK = 500  # ids in one IN list: well under every engine's limit of bound values
_SI, _F, _CF = SessionIndex.__table__, Finding.__table__, CountedFinding.__table__  # type: ignore[attr-defined]
_MARKS = tuple(c.name for c in _SI.columns if c.name.startswith("counted_"))


@dataclass
class BatchIndexed:
    stats: IndexStats = field(default_factory=IndexStats)
    # session id -> the archive path its row named before this batch, when that changed:
    # the file a caller may remove once the batch is committed
    replaced: dict[str, str] = field(default_factory=dict)


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for i in range(0, len(ids), _CHUNK):
        yield ids[i : i + _CHUNK]


def _finding_values(f: Mapping[str, Any]) -> FindingValues:
    ev = f.get("evidence")
    return {
        "verdict": str(f.get("verdict") or "healthy"),
        "score": float(f.get("score") or 0.0),
        "start_index": int(f.get("start_index") or 0),
        "evidence": dict(ev) if isinstance(ev, Mapping) else None,
    }


def _marks_read(row: IndexRow) -> UsageMarks:
    """The high-water marks of a row read back (`counted_*`: numbers, never null)."""

    def count(name: str) -> int:
        value = row[name]
        if not isinstance(value, int):
            raise TypeError(f"session_index.{name} holds {value!r}")
        return value

    cost = row["counted_cost_usd"]
    if not isinstance(cost, int | float):
        raise TypeError(f"session_index.counted_cost_usd holds {cost!r}")
    return {
        "counted_tokens_input": count("counted_tokens_input"),
        "counted_tokens_output": count("counted_tokens_output"),
        "counted_tokens_reasoning": count("counted_tokens_reasoning"),
        "counted_tokens_cache_read": count("counted_tokens_cache_read"),
        "counted_tokens_cache_write": count("counted_tokens_cache_write"),
        "counted_cost_usd": float(cost),
    }


def index_batch(
    db: Session,
    records: Sequence[SessionRecord],
    *,
    redactor: Redactor,
    redacted: bool = False,
    written: Collection[str] = (),
) -> BatchIndexed:
    """Insert or update one index row per record, with counters and findings. Records whose
    text was taken from redacted archive documents (``archiver.batch``) pass ``redacted``;
    any other record is redacted here first. ``written``: the archive names among theirs that
    octel wrote redacted itself, whose text the search catch-up need not redact again."""
    if not records:
        return BatchIndexed()
    # planned as they run: see `indexing.index_records` (4 scans of the table a batch)
    with coalesced(db), pg_direct.planned_as_run(db.connection()):
        return _index_batch(db, records, redactor=redactor, redacted=redacted, written=written)


def _index_batch(
    db: Session,
    records: Sequence[SessionRecord],
    *,
    redactor: Redactor,
    redacted: bool,
    written: Collection[str],
) -> BatchIndexed:
    out = BatchIndexed()
    recs = list(records) if redacted else [redact_record(r, redactor) for r in records]
    if not redacted:
        recs = [_redact_findings(r, redactor) for r in recs]
    ids = sorted({r.session_id for r in recs})  # one order for every writer: no lock cycles
    for sid in ids:
        lock_key(db, "session", sid)
    conn = db.connection()
    # the roots its rows name now: no other writer changes them while it holds `session:`
    roots_now = [root for part in _chunks(ids) for root in roots_of(db, part)]
    lock_links(db, [*roots_now, *(v for r in recs for v in (r.session_id, r.root_session_id, r.label))])
    lock_trees(db, [*roots_now, *(v for r in recs for v in (r.session_id, r.root_session_id))])
    old: dict[str, IndexRow] = {}
    findings: dict[str, dict[str, int]] = {}
    counted: set[tuple[str, str, str]] = set()
    for part in _chunks(ids):
        cols = [*(_SI.c[c] for c in SHARE_COLUMNS), _SI.c.archive_path, *(_SI.c[m] for m in _MARKS)]
        for was in rows_for_update(db, select(*cols).where(_SI.c.session_id.in_(part))):
            old[str(was["session_id"])] = was
        q = select(_F.c.id, _F.c.session_id, _F.c.detector).where(
            _F.c.session_id.in_(part), _F.c.source == _SOURCE
        )
        for row in conn.execute(q):
            findings.setdefault(row.session_id, {})[row.detector] = row.id
        q = select(_CF.c.session_id, _CF.c.detector, _CF.c.verdict).where(
            _CF.c.session_id.in_(part), _CF.c.source == _SOURCE
        )
        counted |= {(r.session_id, r.detector, r.verdict) for r in conn.execute(q)}
    # the marks each session's counters stand at: its row's, then its last record's
    high = {sid: _marks_read(was) for sid, was in old.items()}
    rows: dict[str, IndexValues] = {}
    for r in recs:
        high[r.session_id] = marks = _bump_usage(db, r, high.get(r.session_id))
        if r.session_id not in old and r.session_id not in rows:
            bump(db, "sessions_archived_total", {"agent": r.agent or "", "source": source_label(r.source)}, 1)
            if (gen := opencode_generation(r.source, r.schema_version, r.opencode_version)) is not None:
                bump(db, "opencode_sessions_archived_total", {"generation": str(gen)}, 1)
            out.stats.new += 1
        else:
            out.stats.updated += 1
        rows[r.session_id] = _fields(r, None, marks)
    for sid, values in rows.items():
        prev = old.get(sid)
        if prev is not None and prev["archive_path"] != values["archive_path"]:
            out.replaced[sid] = str(prev["archive_path"])
    named = [{**v, "cycle_id": old[s]["cycle_id"] if s in old else None} for s, v in rows.items()]
    for values, driver in zip(rows.values(), drivers_of(db, named), strict=True):
        values["driver"] = driver
    _write_rows(conn, rows, old)
    ids_before = [str(o[c]) for o in old.values() for c in ("session_id", "root_session_id")]
    refresh_trees(
        db, [*(v for r in rows.values() for v in (r["session_id"], r["root_session_id"])), *ids_before]
    )
    # the summary after the index rows, in the order every writer takes them: a writer holding
    # a `spend_day` row while it waited for an index row deadlocked against a cycle's relink
    apply(db, shares(rows.values()), shares(old.values()))
    out.stats.findings_new = _write_findings(db, conn, recs, findings, counted)
    # the search catch-up reads their text later
    enqueue(db, [r.session_id for r in recs], redacted=written_redacted(recs, written))
    return out


def _redact_findings(r: SessionRecord, redactor: Redactor) -> SessionRecord:
    red, _ = redactor.redact_obj([dict(f) for f in r.findings])
    return dataclasses.replace(r, findings=tuple(red))


def _write_rows(conn: Any, rows: Mapping[str, IndexValues], old: Mapping[str, object]) -> None:
    new = [v for sid, v in rows.items() if sid not in old]
    changed = [{**v, "b_sid": sid} for sid, v in rows.items() if sid in old]
    if new:
        conn.execute(insert(_SI), new)
    if changed:
        keys = [k for k in changed[0] if k not in ("b_sid", "session_id")]
        stmt = update(_SI).where(_SI.c.session_id == bindparam("b_sid"))
        conn.execute(stmt.values({k: bindparam(k) for k in keys}), changed)


def _write_findings(
    db: Session,
    conn: Any,
    recs: Sequence[SessionRecord],
    existing: dict[str, dict[str, int]],
    counted: set[tuple[str, str, str]],
) -> int:
    """Apply each record's findings in order, as one record at a time would (a finding that
    goes away is deleted, one that comes back is new again; each new (session, detector,
    verdict) is counted once), then write the end state in a few statements."""
    now = utcnow()
    # session -> detector -> (its values, None while no record of the batch has named a
    # stored row; the id of its stored row, None for a new row)
    state: dict[str, dict[str, tuple[FindingValues | None, int | None]]] = {}
    gone: list[dict[str, int]] = []
    counts: list[CountedValues] = []
    new = 0
    for r in recs:
        sid = r.session_id
        mine = state.setdefault(sid, {d: (None, i) for d, i in existing.get(sid, {}).items()})
        seen: set[str] = set()
        for f in r.findings:
            detector = str(f.get("detector") or "")
            if not detector or detector in seen:
                continue
            seen.add(detector)
            values = _finding_values(f)
            key = (sid, detector, values["verdict"])
            if key not in counted:
                counted.add(key)
                counts.append({"session_id": sid, "source": _SOURCE, "detector": detector, "verdict": key[2]})
                bump(db, "findings_total", {"detector": detector, "verdict": key[2]}, 1)
            if detector not in mine:
                new += 1
            mine[detector] = (values, mine[detector][1] if detector in mine else None)
        for d in [d for d in mine if d not in seen]:
            row_id = mine.pop(d)[1]
            if row_id is not None:
                gone.append({"b_id": row_id})
    inserts = [
        {**v, "session_id": sid, "detector": d, "source": _SOURCE, "detected_at": now}
        for sid, mine in state.items()
        for d, (v, i) in mine.items()
        if i is None and v is not None
    ]
    updates = [
        {**v, "b_id": i}
        for mine in state.values()
        for v, i in mine.values()
        if i is not None and v is not None
    ]
    if gone:
        conn.execute(delete(_F).where(_F.c.id == bindparam("b_id")), gone)
    if inserts:
        conn.execute(insert(_F), inserts)
    if updates:
        keys = ("verdict", "score", "start_index", "evidence")
        stmt = update(_F).where(_F.c.id == bindparam("b_id")).values({k: bindparam(k) for k in keys})
        conn.execute(stmt, updates)
    if counts:
        conn.execute(insert(_CF), counts)
    return new
