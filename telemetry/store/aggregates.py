"""Monotonic counters kept at write time, so `/metrics` never scans history.

A writer calls `bump` in the same transaction as the row it writes: the counter and the row
commit together or not at all. Pruning deletes rows, never these.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, select

from telemetry.metrics.catalogue import CATALOGUE
from telemetry.store import pg_direct
from telemetry.store.held import hold
from telemetry.store.models import Aggregate
from telemetry.timeutil import utcnow

__all__ = [
    "COUNTERS",
    "CYCLE_DURATION_BUCKETS",
    "bump",
    "coalesced",
    "labels_key",
    "observe_cycle_duration",
    "read_all",
]

_PENDING = "octel_pending_bumps"


def _counters() -> dict[str, tuple[str, ...]]:
    """Counter name -> labels, from the catalogue's `aggregate` metrics. A histogram is its
    `_bin` counters by `le` (observations in that bucket alone, cumulated when read), plus
    `_sum` and `_count`; `_bucket` holds the cumulative counts stores written before kept, and
    is still read (`telemetry.metrics.snapshot.histogram_series` adds the two)."""
    out: dict[str, tuple[str, ...]] = {}
    for m in CATALOGUE:
        if m.source != "aggregate":
            continue
        if m.kind == "histogram":
            out[f"{m.aggregate_key}_bin"] = (*m.labels, "le")
            out[f"{m.aggregate_key}_bucket"] = (*m.labels, "le")
            out[f"{m.aggregate_key}_sum"] = m.labels
            out[f"{m.aggregate_key}_count"] = m.labels
        else:
            out[m.aggregate_key] = m.labels
    return out


# The counters writers keep, declared once in the metric catalogue (`octel_` stripped):
# cycles_total (ingest.finish_cycle), agent_runs_* (ingest.add_agent_run), sessions_archived_total
# (a session indexed for the first time), session_* (positive deltas on re-archive),
# findings_total (a new finding row), archive_failures_total (a session a run could not write).
COUNTERS: dict[str, tuple[str, ...]] = _counters()

# Seconds; a dispatcher cycle runs from seconds to an hour or so.
CYCLE_DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 1800.0, 3600.0)


def labels_key(labels: Mapping[str, str]) -> str:
    return _labels_key(tuple((k, str(v)) for k, v in labels.items()))


@functools.lru_cache(maxsize=4096)
def _labels_key(items: tuple[tuple[str, str], ...]) -> str:
    # a bulk import and every cycle finish bump the same few label sets: each written out once
    return json.dumps(dict(items), sort_keys=True, separators=(",", ":"))


def bump(db: Session, metric: str, labels: Mapping[str, str], delta: float) -> None:
    """Add `delta` (≥ 0) to a counter, creating it at zero first."""
    if delta < 0:
        raise ValueError("counters only go up")
    if metric not in COUNTERS:
        raise KeyError(f"unknown counter {metric!r}; declare it in telemetry.metrics.catalogue")
    if delta == 0:
        return
    pending: dict[tuple[str, str], float] | None = db.info.get(_PENDING)
    if pending is not None:
        key = (metric, labels_key(labels))
        pending[key] = pending.get(key, 0.0) + delta
        return
    _upsert(db, metric, labels_key(labels), delta)


@contextmanager
def coalesced(db: Session) -> Iterator[None]:
    """Inside the block, bumps of one counter add up in memory and are written when it ends,
    still in the same transaction, in one statement: a bulk import writes each counter once
    per batch instead of once per row, a cycle's finish its fifteen counters in one round
    trip. Nothing is written when the block raises. Nested blocks write with the outermost."""
    with hold(db, _PENDING, dict, lambda db, bumps: _upsert_many(db, sorted(bumps.items()))):
        yield


@functools.cache
def _upsert_statement(dialect: str) -> Any:
    """One INSERT … ON CONFLICT DO UPDATE with bound values, built once per dialect, so a bump
    costs an execution, not a statement build and compile."""
    table = Aggregate.__table__  # type: ignore[attr-defined]
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table)
    return stmt.on_conflict_do_update(
        index_elements=["metric", "labels"],
        set_={"value": table.c.value + stmt.excluded.value, "updated_at": stmt.excluded.updated_at},
    )


def _upsert(db: Session, metric: str, key: str, delta: float) -> None:
    _upsert_many(db, [((metric, key), delta)])


def _upsert_many(db: Session, items: list[tuple[tuple[str, str], float]]) -> None:
    """Add each delta to its counter. Rows are taken in (metric, labels) order, the same in
    every transaction, so two writers bumping the same counters queue instead of deadlocking."""
    if not items:
        return
    now = utcnow()
    conn = db.connection()
    if conn.dialect.name == "postgresql":
        arrays = [[m for (m, _), _ in items], [k for (_, k), _ in items], [float(d) for _, d in items]]
        pg_direct.execute(conn, _UPSERT_ALL, [now, *arrays])
        return
    rows = [{"metric": m, "labels": k, "value": d, "updated_at": now} for (m, k), d in items]
    conn.execute(_upsert_statement(conn.dialect.name), rows if len(rows) > 1 else rows[0])


# Every counter of a batch in one statement whatever their number (so it is prepared once),
# instead of one statement per counter sent in a pipeline: the function scan hands the rows
# over in the arrays' order, so the rows are taken in the sorted order every writer uses.
_UPSERT_ALL = (
    'INSERT INTO aggregate (metric, labels, "value", updated_at) '
    "SELECT m, l, d, %s FROM unnest(%s::text[], %s::text[], %s::double precision[]) AS u(m, l, d) "
    'ON CONFLICT (metric, labels) DO UPDATE SET "value" = aggregate."value" + excluded."value", '
    "updated_at = excluded.updated_at"
)


_BIN_LABELS = (*(repr(le) for le in CYCLE_DURATION_BUCKETS), "+Inf")


def observe_cycle_duration(db: Session, driver: str, seconds: float) -> None:
    """Histogram of cycle durations per driver: the one bucket the duration falls in, plus
    sum and count. Three counters a finish rather than fourteen cumulative ones: every
    finish's counters are rows all writers update, so each one costs every batch."""
    with coalesced(db):
        le = _BIN_LABELS[bisect.bisect_left(CYCLE_DURATION_BUCKETS, seconds)]
        bump(db, "cycle_duration_seconds_bin", {"driver": driver, "le": le}, 1)
        bump(db, "cycle_duration_seconds_sum", {"driver": driver}, max(seconds, 0.0))
        bump(db, "cycle_duration_seconds_count", {"driver": driver}, 1)


def read_all(db: Session) -> list[tuple[str, dict[str, str], float]]:
    """Every counter as (metric, labels, value). Each label set is parsed once per process:
    the same few hundred come back at every scrape."""
    rows = db.exec(select(Aggregate.metric, Aggregate.labels, Aggregate.value)).all()
    return [(m, dict(_parsed(lbl)), v) for m, lbl, v in rows]


@functools.lru_cache(maxsize=8192)
def _parsed(key: str) -> tuple[tuple[str, str], ...]:
    return tuple(json.loads(key).items())
