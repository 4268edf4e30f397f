"""A window's spend grouped by source, agent, model, driver and day, the finest grouping the
Costs page folds every view from.

Whole UTC days come from the daily summary (`telemetry.store.spend`): a few rows per day
instead of every session. The part of the window that is not a whole day (a `since` of
"7d" starts mid-day) is read from the index rows, with the driver each row keeps; Claude runs
whose conversation is not archived are read from their table (they carry no driver and are few).
`recomputed_records` is the definition all of that must equal: every session of the window
with its driver looked up in the cycle table (what `octel doctor` and the tests compare with).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta
from typing import Any, Literal

from sqlalchemy import String, bindparam, case, cast, exists, func, literal, literal_column, null, union_all
from sqlalchemy import select as sa_select
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Session, col

from archiver.metrics import TOKEN_KINDS
from telemetry.queries.spend_record import FINE_KEYS, SpendRecord, fold
from telemetry.queries.top_spend import session_window, time_window
from telemetry.store.models import AgentRun, SessionIndex
from telemetry.store.spend import SpendDay, correlated_driver, day_expr
from telemetry.timeutil import as_utc, utcnow

__all__ = ["FINE_KEYS", "SpendRecord", "fold", "recomputed_records", "window_groupings", "window_records"]

Driver = Literal["stored", "lookup"]


def _dialect(db: Session) -> str:
    return db.get_bind().dialect.name


def _sessions_part(dialect: str, where: Sequence[ColumnElement[bool]], driver: Driver, sign: int = 1) -> Any:
    """The rows of `where` as parts of a union; `sign` -1 to take them away from a day."""
    si = SessionIndex
    at = func.coalesce(col(si.created_at), col(si.archived_at))
    return sa_select(
        case((col(si.source) == "claude_code", literal("claude")), else_=literal("opencode")).label("source"),
        col(si.agent).label("agent"),
        col(si.model).label("model"),
        (col(si.driver) if driver == "stored" else correlated_driver()).label("driver"),
        day_expr(dialect, at).label("day"),
        *((sign * col(getattr(si, f"tokens_{k}"))).label(f"t_{k}") for k in TOKEN_KINDS),
        (sign * col(si.cost_usd)).label("cost"),
        literal(sign).label("n"),
    ).where(*where)


def _runs_part(dialect: str, since: Any, until: Any) -> Any:
    """Claude runs whose conversation is not archived: an archived one is counted through its
    sessions (the tree's own costs, subagents included), never twice."""
    r = AgentRun
    archived = exists().where(col(SessionIndex.session_id) == col(r.session_id))
    return sa_select(
        literal("claude").label("source"),
        col(r.agent).label("agent"),
        col(r.model).label("model"),
        cast(null(), String).label("driver"),
        day_expr(dialect, col(r.created_at)).label("day"),
        col(r.input_tokens).label("t_input"),
        col(r.output_tokens).label("t_output"),
        literal(0).label("t_reasoning"),
        col(r.cache_read_tokens).label("t_cache_read"),
        col(r.cache_creation_tokens).label("t_cache_write"),
        col(r.cost_usd).label("cost"),
        literal(1).label("n"),
    ).where(*time_window(col(r.created_at), since, until), ~archived)


def _grouped(db: Session, parts: Sequence[Any]) -> list[SpendRecord]:
    u = union_all(*parts).subquery("u")
    group = [u.c.source, *(u.c[k] for k in FINE_KEYS)]
    sums = [func.sum(u.c[f"t_{k}"]).label(k) for k in TOKEN_KINDS]
    stmt = sa_select(*group, *sums, func.sum(u.c.cost).label("cost_usd"), func.count().label("count"))
    return [_record(r) for r in db.connection().execute(stmt.group_by(*group)).mappings()]


def _record(r: Any) -> SpendRecord:
    """A row of the database's groups (`source`, the fine keys, tokens by kind, `cost_usd`,
    `count`) as a record."""
    return SpendRecord(
        source=r["source"],
        agent=r["agent"],
        model=r["model"],
        driver=r["driver"],
        day=r["day"],
        input=int(r["input"] or 0),
        output=int(r["output"] or 0),
        reasoning=int(r["reasoning"] or 0),
        cache_read=int(r["cache_read"] or 0),
        cache_write=int(r["cache_write"] or 0),
        cost_usd=float(r["cost_usd"] or 0.0),
        count=int(r["count"]),
    )


def recomputed_records(db: Session, since: datetime | None, until: datetime | None) -> list[SpendRecord]:
    """The window's records from every session and run in it, drivers looked up in the cycles."""
    return _grouped(
        db,
        [
            _sessions_part(_dialect(db), session_window(since, until), "lookup"),
            _runs_part(_dialect(db), since, until),
        ],
    )


def _between(dialect: str, start: Any, end: Any, sign: int = 1) -> list[Any]:
    """The sessions whose time is in [start, end) as two parts of a union, each a range of one
    index read from the index alone (an OR of the two would be a bitmap of both, visiting a
    table page per session on PostgreSQL): by creation time, and by archiving time for the
    sessions whose server did not say when they were created."""
    si = SessionIndex
    created = col(si.created_at)
    archived = col(si.archived_at)
    return [
        _sessions_part(dialect, [created >= start, created < end], "stored", sign),
        _sessions_part(dialect, [created.is_(None), archived >= start, archived < end], "stored", sign),
    ]


def _midnight(day: Any) -> datetime:
    return datetime.combine(day, time(), UTC)


def window_records(db: Session, since: datetime | None, until: datetime | None) -> list[SpendRecord]:
    """The window's records from the daily summary for its whole days, the index rows for the
    rest."""
    since = as_utc(since) if since is not None else None
    until = as_utc(until) if until is not None else None
    first = None if since is None else since.date() + timedelta(days=0 if since.time() == time() else 1)
    end = None if until is None else until.date()
    if first is not None and end is not None and first >= end:
        return recomputed_window(db, since, until)
    parts = [_runs_part(_dialect(db), since, until)]
    if since is not None and first is not None and since < _midnight(first):
        parts.extend(_between(_dialect(db), since, _midnight(first)))
    if until is not None and end is not None and until > _midnight(end):
        parts.extend(_between(_dialect(db), _midnight(end), until))
    return _summary(db, first, end) + _grouped(db, parts)


def _summary_part(first: Any, end: Any) -> Any:
    """The summary's rows of the whole days [first, end), as a part of the window's union."""
    sd = SpendDay
    stmt: Any = sa_select(
        col(sd.source).label("source"),
        *(col(getattr(sd, k)).label(k) for k in ("agent", "model", "driver", "day")),
        *(col(getattr(sd, f"tokens_{k}")).label(f"t_{k}") for k in TOKEN_KINDS),
        col(sd.cost_usd).label("cost"),
        col(sd.count).label("n"),
    ).where(col(sd.count) > 0)
    if first is not None:
        stmt = stmt.where(col(sd.day) >= first)
    if end is not None:
        stmt = stmt.where(col(sd.day) < end)
    return stmt


# How a window is read (`_plan`): ("inside" for a window within one day, else "edges"; whether
# it has a start, an end, whole days from a first one, whole days up to a last one; how each
# edge day is read: "rows", its hours inside the window, "less", the day's summary less its
# hours outside, None, no partial day there). The statement of a
# shape is built once (`_statement`) and run with the window's times as parameters: building
# it took as long as running it.
Shape = tuple[Any, ...]
# A window's bind parameters: its times, and the summary's first and last day as ISO text.
Params = dict[str, datetime | str | None]


def _plan(since: datetime | None, until: datetime | None) -> tuple[Shape, Params]:
    """What `window_records` reads, as the shape of one union and its parameters: the
    summary's whole days [lo, hi), the index rows of the partial days, the runs.

    A partial day at an edge is read either as its rows inside the window, or as the day's
    summary less its rows outside the window, whichever spans less time up to now (no session
    is created in the future): a "7d" window ending now reads the hours of its first day
    before or after `since`, whichever are fewer, and almost nothing of today."""
    first = None if since is None else since.date() + timedelta(days=0 if since.time() == time() else 1)
    end = None if until is None else until.date()
    values: Params = {"since": since, "until": until}
    if first is not None and end is not None and first >= end:
        return ("inside", since is not None, until is not None), values
    now = utcnow()
    lo, hi, lo_edge, hi_edge = first, end, None, None
    if since is not None and first is not None and since < _midnight(first):
        day = _midnight(since.date())
        if since - day < min(_midnight(first), now) - since:
            lo, lo_edge = since.date(), "less"  # the whole day, less its hours before `since`
            values |= {"lo_a": day, "lo_b": since}
        else:
            lo_edge = "rows"
            values |= {"lo_a": since, "lo_b": _midnight(first)}
    if until is not None and end is not None and until > _midnight(end):
        after = _midnight(end + timedelta(days=1))
        if max(min(after, now) - until, timedelta()) < until - _midnight(end):
            hi, hi_edge = end + timedelta(days=1), "less"  # the whole day, less its hours from `until` on
            values |= {"hi_a": until, "hi_b": after}
        else:
            hi_edge = "rows"
            values |= {"hi_a": _midnight(end), "hi_b": until}
    values |= {"lo": lo.isoformat() if lo else None, "hi": hi.isoformat() if hi else None}
    shape = ("edges", since is not None, until is not None, lo is not None, hi is not None, lo_edge, hi_edge)
    return shape, values


def _window_parts(dialect: str, shape: Shape) -> list[Any]:
    """The parts of the union of a window of `shape`, its times as bind parameters."""
    since: Any = bindparam("since") if shape[1] else None
    until: Any = bindparam("until") if shape[2] else None
    if shape[0] == "inside":
        rows = [
            _sessions_part(dialect, session_window(since, until), "stored"),
            _runs_part(dialect, since, until),
        ]
        return [_pregrouped(rows)]
    _, _, _, has_lo, has_hi, lo_edge, hi_edge = shape
    rows = [_runs_part(dialect, since, until)]
    for edge, a, b in ((lo_edge, "lo_a", "lo_b"), (hi_edge, "hi_a", "hi_b")):
        if edge is not None:
            rows.extend(_between(dialect, bindparam(a), bindparam(b), -1 if edge == "less" else 1))
    summary = _summary_part(bindparam("lo") if has_lo else None, bindparam("hi") if has_hi else None)
    return [summary, _pregrouped(rows)]


def _pregrouped(parts: Sequence[Any]) -> Any:
    """Row parts summed by the summary's keys first: each grouping then reads a few hundred
    groups, not every session of the partial days."""
    u = union_all(*parts).subquery("rows")
    group = [u.c.source, *(u.c[k] for k in ("agent", "model", "driver", "day"))]
    return sa_select(
        *group,
        *(func.sum(u.c[f"t_{k}"]).label(f"t_{k}") for k in TOKEN_KINDS),
        func.sum(u.c.cost).label("cost"),
        func.sum(u.c.n).label("n"),
    ).group_by(*group)


def window_groupings(
    db: Session, since: datetime | None, until: datetime | None, key_sets: Sequence[Sequence[str]]
) -> list[list[SpendRecord]]:
    """The window's records summed down to (source, *keys) for each of `key_sets`, each list
    most expensive first: one statement, which reads the window once and groups it each way
    in the database (a few rows come back, not every group of every day)."""
    since = as_utc(since) if since is not None else None
    until = as_utc(until) if until is not None else None
    sets = tuple(tuple(keys) for keys in key_sets)
    for keys in sets:
        bad = [k for k in keys if k not in FINE_KEYS]
        if bad:
            raise ValueError(f"cannot group by {bad[0]!r}; choose from {', '.join(FINE_KEYS)}")
    shape, values = _plan(since, until)
    out: list[list[SpendRecord]] = [[] for _ in key_sets]
    if sets:
        for r in db.connection().execute(_statement(_dialect(db), shape, sets), values).mappings():
            rec = _record(r)
            if rec.count:  # not a group whose sessions were all taken away with their hours
                out[int(r["g"])].append(rec)
    return [fold(recs, keys) for recs, keys in zip(out, key_sets, strict=True)]


@functools.lru_cache(maxsize=64)
def _statement(dialect: str, shape: Shape, key_sets: tuple[tuple[str, ...], ...]) -> Any:
    """The window of `shape` read once (a common table expression) and grouped by each of
    `key_sets`, as one union: a member per grouping, numbered `g`."""
    u = union_all(*_window_parts(dialect, shape)).cte("u")
    members = [
        sa_select(
            literal_column(str(i)).label("g"),
            u.c.source,
            *((u.c[k] if k in keys else cast(null(), String)).label(k) for k in FINE_KEYS),
            *(func.sum(u.c[f"t_{k}"]).label(k) for k in TOKEN_KINDS),
            func.sum(u.c.cost).label("cost_usd"),
            func.sum(u.c.n).label("count"),
        ).group_by(u.c.source, *(u.c[k] for k in keys))
        for i, keys in enumerate(key_sets)
    ]
    return union_all(*members)


def recomputed_window(db: Session, since: datetime | None, until: datetime | None) -> list[SpendRecord]:
    """A window inside one day: its index rows (stored drivers) and runs."""
    return _grouped(
        db,
        [
            _sessions_part(_dialect(db), session_window(since, until), "stored"),
            _runs_part(_dialect(db), since, until),
        ],
    )


def _summary(db: Session, first: Any, end: Any) -> list[SpendRecord]:
    sd = SpendDay
    stmt = sa_select(
        col(sd.source),
        *(col(getattr(sd, k)) for k in FINE_KEYS),
        *(col(getattr(sd, f"tokens_{k}")).label(k) for k in TOKEN_KINDS),
        col(sd.cost_usd),
        col(sd.count),
    ).where(col(sd.count) > 0)
    if first is not None:
        stmt = stmt.where(col(sd.day) >= first.isoformat())
    if end is not None:
        stmt = stmt.where(col(sd.day) < end.isoformat())
    return [_record(r) for r in db.connection().execute(stmt).mappings()]
