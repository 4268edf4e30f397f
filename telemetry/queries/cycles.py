"""Cycle queries: the newest-first list (filters, keyset paging) and the per-driver summary."""

from __future__ import annotations

import dataclasses
import operator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, func, or_, text
from sqlmodel import Session, col, select

from telemetry.queries.fleet_models import CyclePage, CycleRecord, DriverSummary
from telemetry.queries.paging import decode_cursor, encode_cursor
from telemetry.store.cycle_row import CycleRow
from telemetry.store.models import Cycle, SessionIndex
from telemetry.timeutil import as_utc

__all__ = [
    "CycleFilter",
    "CycleJson",
    "cycle_dict",
    "cycles_summary",
    "linked_cycle",
    "list_cycles",
    "session_titles",
]


@dataclass(frozen=True, slots=True)
class CycleFilter:
    driver: str | None = None
    terminal_state: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    in_flight: bool | None = None
    limit: int = 50
    cursor: str | None = None
    cycle_id: str | None = None  # this one cycle, by its exact id


CycleJson = dict[str, str | int | float | bool | None]
"""A cycle's public fields as plain JSON, named and in the order `CycleRecord` declares them:
what the ingest routes answer with, encoded as is (no model built on that path), and what a
`CycleRecord` of the list is validated from."""

# `CycleRecord` is the one declaration of a cycle's public fields. Those a stored cycle gives are
# its columns (`CycleRow`'s), copied as they are, and the times computed from them here; the rest
# (the list's session title, the fleet's word on an open cycle) are filled in by whoever knows them.
_TIMES = ("started_at", "ended_at", "in_flight", "duration_s", "elapsed_s")
_COLUMNS = {f.name for f in dataclasses.fields(CycleRow)}
_FIELDS = tuple(n for n in CycleRecord.model_fields if n in _TIMES or n in _COLUMNS)
_COPIED = tuple(n for n in _FIELDS if n not in _TIMES)
_copied = operator.attrgetter(*_COPIED)


def cycle_dict(c: Cycle | CycleRow, now: datetime | None = None) -> CycleJson:
    """A cycle's public fields, from its ORM object or its plain row (`CycleRow`)."""
    started = as_utc(c.started_at)
    ended = as_utc(c.ended_at) if c.ended_at else None
    out: CycleJson = dict.fromkeys(_FIELDS)  # in the record's order, whatever is set first
    out.update(zip(_COPIED, _copied(c), strict=True))
    out["started_at"] = started.isoformat()
    out["ended_at"] = ended.isoformat() if ended else None
    out["in_flight"] = ended is None
    out["duration_s"] = round((ended - started).total_seconds(), 3) if ended else None
    out["elapsed_s"] = round((now - started).total_seconds(), 3) if now and ended is None else None
    return out


def list_cycles(db: Session, f: CycleFilter, now: datetime) -> CyclePage:
    """A page of cycles, newest first; every filter and the page run in the database."""
    stmt = select(Cycle)
    if f.cycle_id:
        stmt = stmt.where(Cycle.cycle_id == f.cycle_id)
    if f.driver:
        stmt = stmt.where(Cycle.driver == f.driver)
    if f.terminal_state:
        stmt = stmt.where(Cycle.terminal_state == f.terminal_state)
    if f.since:
        stmt = stmt.where(Cycle.started_at >= f.since)
    if f.until:
        stmt = stmt.where(Cycle.started_at < f.until)
    if f.in_flight is not None:
        stmt = stmt.where(col(Cycle.ended_at).is_(None) if f.in_flight else col(Cycle.ended_at).is_not(None))
    if f.cursor:
        at, row_id = decode_cursor(f.cursor)
        started, rid = col(Cycle.started_at), col(Cycle.id)
        stmt = stmt.where(or_(started < at, and_(started == at, rid < row_id)))
    rows = db.exec(stmt.order_by(col(Cycle.started_at).desc(), col(Cycle.id).desc()).limit(f.limit + 1)).all()
    more = len(rows) > f.limit
    rows = rows[: f.limit]
    nxt = encode_cursor(rows[-1].started_at, rows[-1].id or 0) if more and rows else None
    items = [cycle_dict(r, now) for r in rows]
    titles = session_titles(db, {r.session_id for r in rows if r.session_id})
    for r, i in zip(rows, items, strict=True):
        i["session_title"] = titles.get(r.session_id or "")
    return CyclePage.model_validate({"items": items, "next_cursor": nxt})


def session_titles(db: Session, session_ids: set[str]) -> dict[str, str]:
    """Each named session's title: the archive's, else the live row's (both stored redacted,
    whole: a table cuts it to its width). A session with no title, or unknown, is left out."""
    if not session_ids:  # an empty page asks nothing, and defines no live table
        return {}
    from telemetry.store.live_models import LiveSession  # here: most commands never read it

    out: dict[str, str] = {}
    ids = sorted(session_ids)
    for table in (SessionIndex, LiveSession):
        want = [i for i in ids if i not in out]
        if not want:
            break
        sid, title = col(table.session_id), col(table.title)
        for s, t in db.exec(select(sid, title).where(sid.in_(want), title.is_not(None))).all():
            if t and t.strip():
                out.setdefault(s, t)
    return out


@dataclass
class _DriverSummary:
    driver: str
    total: int = 0
    in_flight: int = 0
    by_state: dict[str, dict[str, int]] = field(default_factory=dict)


# SQLite's planner, its statistics sampled, took the window for a few rows per driver and read
# it through (driver, started_at), each row then looked up in the table: 250-400 ms for a day of a
# fleet's 10,000,000 cycles. The index of migration 0010 holds every column the count needs (40 ms).
_SUMMARY_SQLITE = text(
    "SELECT driver, terminal_state, worker_outcome, count(*) FROM cycle "
    "INDEXED BY ix_cycle_started_outcome WHERE started_at >= :since "
    "GROUP BY driver, terminal_state, worker_outcome"
).bindparams(bindparam("since", type_=Cycle.__table__.c.started_at.type))  # type: ignore[attr-defined]


def cycles_summary(db: Session, since: datetime) -> list[DriverSummary]:
    """Per driver: cycles begun since `since`, by terminal_state by worker_outcome."""
    if db.get_bind().dialect.name == "sqlite":
        rows: Any = db.connection().execute(_SUMMARY_SQLITE, {"since": since}).all()
    else:
        rows = db.exec(
            select(Cycle.driver, Cycle.terminal_state, Cycle.worker_outcome, func.count())
            .where(Cycle.started_at >= since)
            .group_by(col(Cycle.driver), col(Cycle.terminal_state), col(Cycle.worker_outcome))
        ).all()
    out: dict[str, _DriverSummary] = {}
    for driver, state, outcome, n in rows:
        s = out.setdefault(driver, _DriverSummary(driver))
        s.total += n
        if state is None:
            s.in_flight += n
            continue
        s.by_state.setdefault(state, {})[outcome or ""] = n
    return [
        DriverSummary(driver=s.driver, total=s.total, in_flight=s.in_flight, by_state=s.by_state)
        for s in sorted(out.values(), key=lambda s: s.driver)
    ]


def linked_cycle(
    db: Session, session_id: str, root_session_id: str, cycle_id: str | None, label: str | None
) -> Cycle | None:
    """The cycle a session belongs to, whichever side recorded the link.

    The archive may name its cycle (`cycle_id`, or a label that is a cycle id), or the
    dispatcher may have posted the session with its cycle (`session_id`, naming the session
    or the root of its tree). The archive's own word wins; of several cycles naming the same
    session (a retried task), the newest.
    """
    for cid in (cycle_id, label):
        if cid:
            c = db.exec(select(Cycle).where(Cycle.cycle_id == cid)).first()
            if c is not None:
                return c
    for sid in dict.fromkeys((session_id, root_session_id)):
        c = db.exec(
            select(Cycle)
            .where(Cycle.session_id == sid)
            .order_by(col(Cycle.started_at).desc(), col(Cycle.id).desc())
            .limit(1)
        ).first()
        if c is not None:
            return c
    return None
