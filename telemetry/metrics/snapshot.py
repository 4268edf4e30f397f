"""Metric families derived from a few store reads, for `/metrics`.

`read_store` does the I/O: daemon rows with their named in-flight cycles (unique index), the
open cycles per driver (a partial index of them alone) and the write-time counters in the
`aggregate` table. None
of it grows with history. `derive` is pure: reads in, families out, so it is property-tested
without a store.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import and_
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, func, select

from telemetry.metrics.catalogue import CATALOGUE, DAEMON_STATES, Metric
from telemetry.metrics.live import LiveReads, live_series, read_live
from telemetry.queries.health import Liveness, State, daemon_state, local_liveness
from telemetry.queries.quotas import QuotaOut, quota_windows
from telemetry.store import aggregates
from telemetry.store.models import Cycle, Daemon
from telemetry.timeutil import as_utc
from tower.quotas import Quota

__all__ = [
    "DaemonReading",
    "Family",
    "HistogramSeries",
    "OpenCycles",
    "Series",
    "StoreReads",
    "counter_series",
    "derive",
    "histogram_series",
    "read_store",
]

CounterRow = tuple[str, dict[str, str], float]


@dataclass(frozen=True, slots=True)
class Series:
    labels: tuple[str, ...]  # values, in the metric's label order
    value: float


@dataclass(frozen=True, slots=True)
class HistogramSeries:
    labels: tuple[str, ...]
    buckets: tuple[tuple[str, float], ...]  # cumulative, by upper bound, ending with +Inf
    sum: float


@dataclass(frozen=True, slots=True)
class Family:
    metric: Metric
    series: tuple[Series, ...] | tuple[HistogramSeries, ...]


@dataclass(frozen=True, slots=True)
class OpenCycles:
    driver: str
    count: int
    oldest_start: datetime


@dataclass(frozen=True, slots=True)
class DaemonReading:
    driver: str
    host: str
    state: State
    last_heartbeat_at: datetime
    in_flight: bool


@dataclass(frozen=True, slots=True)
class StoreReads:
    threshold_s: float
    daemons: Sequence[DaemonReading] = ()
    open_cycles: Sequence[OpenCycles] = ()
    counters: Sequence[CounterRow] = field(default_factory=tuple)
    live: LiveReads = field(default_factory=LiveReads)
    quotas: Sequence[QuotaOut] = ()


def read_store(
    db: Session,
    now: datetime,
    threshold_s: float,
    liveness: Callable[[str, int | None], Liveness] = local_liveness,
    quotas: Sequence[Quota] = (),
) -> StoreReads:
    """Everything a scrape needs, in three queries here (and two in `read_live`) that never
    walk history: every round trip is a wait behind the rest of a busy host.

    The daemon states follow `telemetry.queries.health.daemon_health` (a test holds them equal) but are
    read in bulk: open cycles from their partial index alone, each named cycle by its unique
    id in the same query as the daemons.
    """
    rows = db.exec(
        select(Cycle.driver, func.count(), func.min(Cycle.started_at))
        .where(col(Cycle.ended_at).is_(None))
        .group_by(Cycle.driver)
    ).all()
    open_cycles = [OpenCycles(d, int(n), as_utc(t)) for d, n, t in rows]
    drivers_with_open = {o.driver for o in open_cycles}
    # A named cycle is in flight unless the store knows it ended under that driver: a name the
    # store does not know (or knows under another driver) still counts, since the daemon says so.
    ended = and_(
        col(Cycle.cycle_id) == col(Daemon.in_flight_cycle_id),
        col(Cycle.driver) == col(Daemon.driver),
        col(Cycle.ended_at).is_not(None),
    )
    daemons = (
        db.connection()
        .execute(
            sa_select(
                col(Daemon.driver),
                col(Daemon.host),
                col(Daemon.pid),
                col(Daemon.last_heartbeat_at),
                col(Daemon.in_flight_cycle_id),
                col(Daemon.source),
                col(Cycle.id),
            )
            .outerjoin(Cycle, ended)
            .order_by(col(Daemon.driver), col(Daemon.host))
        )
        .all()
    )
    readings = []
    for driver, host, pid, last_beat, named, source, ended_id in daemons:
        beat = as_utc(last_beat)
        # heartbeat files cannot name their cycle: the driver's open one counts
        in_flight = ended_id is None if named else source == "file" and driver in drivers_with_open
        age = max((now - beat).total_seconds(), 0.0)
        state, _ = daemon_state(age, threshold_s, in_flight, liveness(host, pid))
        readings.append(DaemonReading(driver, host, state, beat, in_flight))
    windows = quota_windows(db, quotas, now).quotas if quotas else ()  # declared ones only
    return StoreReads(threshold_s, readings, open_cycles, aggregates.read_all(db), read_live(db), windows)


def _project(labels: dict[str, str], names: Iterable[str]) -> tuple[str, ...]:
    # A label a writer left out reads as empty, as Prometheus treats a missing label.
    return tuple(str(labels.get(n, "")) for n in names)


def counter_series(metric: Metric, rows: Iterable[CounterRow]) -> tuple[Series, ...]:
    """One series per label set of the metric's counter rows; rows that project alike add up.

    A `fill` label gets its every value (at 0) next to each label set that exists.
    """
    key = metric.aggregate_key
    acc: dict[tuple[str, ...], float] = {}
    for name, labels, value in rows:
        if name == key:
            k = _project(labels, metric.labels)
            acc[k] = acc.get(k, 0.0) + value
    if metric.fill is not None:
        at, values = metric.labels.index(metric.fill[0]), metric.fill[1]
        for k in list(acc):
            for v in values:
                acc.setdefault((*k[:at], v, *k[at + 1 :]), 0.0)
    return tuple(Series(k, v) for k, v in sorted(acc.items()))


def _le_value(le: str) -> float:
    try:
        return float(le)
    except ValueError:
        return math.inf


def histogram_series(
    metric: Metric, rows: Iterable[CounterRow], default_les: Sequence[float]
) -> tuple[HistogramSeries, ...]:
    """Rebuild a histogram from its `_bin`, `_bucket`, `_sum` and `_count` counters.

    `_bin` counts the observations in one bucket alone, what writers bump; `_bucket` the
    cumulative counts of stores written before, where a bucket no observation reached has no
    row and reads as the bucket below it (zero for the first). A bucket's count is the two
    added up. Buckets stay cumulative even if bounds changed between versions, and `+Inf` is
    never below the count.
    """
    key = metric.aggregate_key
    buckets: dict[tuple[str, ...], dict[float, float]] = {}
    bins: dict[tuple[str, ...], dict[float, float]] = {}
    sums: dict[tuple[str, ...], float] = {}
    counts: dict[tuple[str, ...], float] = {}
    for name, labels, value in rows:
        if name == f"{key}_bucket":
            b = buckets.setdefault(_project(labels, metric.labels), {})
            le = _le_value(labels.get("le", "+Inf"))
            b[le] = b.get(le, 0.0) + value
        elif name == f"{key}_bin":
            b = bins.setdefault(_project(labels, metric.labels), {})
            le = _le_value(labels.get("le", "+Inf"))
            b[le] = b.get(le, 0.0) + value
        elif name == f"{key}_sum":
            k = _project(labels, metric.labels)
            sums[k] = sums.get(k, 0.0) + value
        elif name == f"{key}_count":
            k = _project(labels, metric.labels)
            counts[k] = counts.get(k, 0.0) + value
    out = []
    for k in sorted(set(buckets) | set(bins) | set(sums) | set(counts)):
        seen, binned = buckets.get(k, {}), bins.get(k, {})
        bounds = sorted({*default_les, *seen, *binned, math.inf})
        running = below = 0.0
        cumulative = []
        for le in bounds:
            running = max(running, seen.get(le, 0.0))
            below += binned.get(le, 0.0)
            count = running + below
            if le == math.inf:
                count = max(count, counts.get(k, 0.0))
            cumulative.append(("+Inf" if le == math.inf else repr(le), count))
        out.append(HistogramSeries(k, tuple(cumulative), sums.get(k, 0.0)))
    return tuple(out)


def _daemon_families(metric: Metric, daemons: Sequence[DaemonReading]) -> tuple[Series, ...]:
    out: list[Series] = []
    for d in daemons:
        key = (d.driver, d.host)
        if metric.name == "octel_daemon_up":
            out.append(Series(key, 0.0 if d.state == "down" else 1.0))
        elif metric.name == "octel_daemon_state":
            out.extend(Series((*key, s), float(d.state == s)) for s in DAEMON_STATES)
        elif metric.name == "octel_daemon_heartbeat_timestamp_seconds":
            out.append(Series(key, d.last_heartbeat_at.timestamp()))
        elif metric.name == "octel_running_long_worker":
            out.append(Series(key, float(d.state == "running_long_worker")))
        elif metric.name == "octel_daemon_cycle_in_flight":
            out.append(Series(key, float(d.in_flight)))
    return tuple(sorted(out, key=lambda s: s.labels))


def _store_series(metric: Metric, reads: StoreReads) -> tuple[Series, ...]:
    if metric.name == "octel_cycles_in_flight":
        return tuple(Series((o.driver,), float(o.count)) for o in sorted(reads.open_cycles, key=_drv))
    if metric.name == "octel_cycle_in_flight_oldest_start_timestamp_seconds":
        return tuple(
            Series((o.driver,), o.oldest_start.timestamp()) for o in sorted(reads.open_cycles, key=_drv)
        )
    if metric.name == "octel_long_worker_threshold_seconds":
        return (Series((), reads.threshold_s),)
    if metric.name == "octel_store_up":
        return (Series((), 1.0),)
    if metric.name.startswith("octel_quota_"):
        return _quota_series(metric.name, reads.quotas)
    if metric.name.startswith("octel_live_"):
        return tuple(Series(k, v) for k, v in live_series(metric.name, reads.live))
    return _daemon_families(metric, reads.daemons)


def _quota_series(name: str, quotas: Sequence[QuotaOut]) -> tuple[Series, ...]:
    out = []
    for q in quotas:
        key = (q.provider, q.window)
        if name == "octel_quota_used_ratio":
            out.append(Series(key, q.used_ratio))
        elif name == "octel_quota_exhausted_forecast_seconds" and q.exhausted_forecast_seconds is not None:
            out.append(Series(key, q.exhausted_forecast_seconds))
        elif name == "octel_quota_reset_timestamp_seconds" and q.reset_at is not None:
            out.append(Series(key, q.reset_at.timestamp()))
    return tuple(sorted(out, key=lambda s: s.labels))


def _drv(o: OpenCycles) -> str:
    return o.driver


def derive(reads: StoreReads) -> list[Family]:
    """Every store-backed family of the catalogue, in catalogue order."""
    by_name: dict[str, list[CounterRow]] = {}  # each family looks at its own rows only
    for row in reads.counters:
        by_name.setdefault(row[0], []).append(row)
    families = []
    for m in CATALOGUE:
        if m.source == "store":
            families.append(Family(m, _store_series(m, reads)))
        elif m.source == "aggregate" and m.kind == "histogram":
            key = m.aggregate_key
            parts = ("_bin", "_bucket", "_sum", "_count")
            rows = [r for part in parts for r in by_name.get(key + part, ())]
            families.append(Family(m, histogram_series(m, rows, aggregates.CYCLE_DURATION_BUCKETS)))
        elif m.source == "aggregate":
            families.append(Family(m, counter_series(m, by_name.get(m.aggregate_key, ()))))
    return families
