"""The pure derivation of metric families, property-tested; bulk daemon reads match /api/health."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import delete
from sqlalchemy.engine import Engine

from telemetry.metrics.catalogue import CATALOGUE, DAEMON_STATES, by_name
from telemetry.metrics.snapshot import (
    DaemonReading,
    HistogramSeries,
    Series,
    StoreReads,
    counter_series,
    derive,
    histogram_series,
    read_store,
)
from telemetry.queries.health import Liveness, daemon_health
from telemetry.store.aggregates import COUNTERS, CYCLE_DURATION_BUCKETS
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Cycle, Daemon

DURATION = by_name("octel_cycle_duration_seconds")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _observed(durations: dict[str, list[float]], legacy: int = 0) -> list[tuple[str, dict[str, str], float]]:
    """The rows observing these durations leaves: the first `legacy` of each driver as stores
    written before kept them (cumulative `_bucket` counters), the rest as
    `aggregates.observe_cycle_duration` writes them now (one `_bin` counter each)."""
    acc: dict[tuple[str, str, str], float] = {}  # (suffix, driver, le) -> value

    def add(key: tuple[str, str, str], v: float) -> None:
        acc[key] = acc.get(key, 0) + v

    for driver, ds in durations.items():
        for i, d in enumerate(ds):
            if i < legacy:
                for le in CYCLE_DURATION_BUCKETS:
                    if d <= le:
                        add(("_bucket", driver, repr(le)), 1)
                add(("_bucket", driver, "+Inf"), 1)
            else:
                le = next((repr(b) for b in CYCLE_DURATION_BUCKETS if d <= b), "+Inf")
                add(("_bin", driver, le), 1)
            add(("_sum", driver, ""), d)
            add(("_count", driver, ""), 1)
    rows: list[tuple[str, dict[str, str], float]] = []
    for (suffix, drv, bound), v in acc.items():
        labels = {"driver": drv, "le": bound} if suffix in ("_bucket", "_bin") else {"driver": drv}
        rows.append((f"cycle_duration_seconds{suffix}", labels, v))
    return rows


drivers = st.sampled_from(["review", "impl", "triage"])
durations = st.dictionaries(drivers, st.lists(st.floats(0, 10_000), min_size=1, max_size=30), max_size=3)


@given(durations, st.integers(0, 31))
def test_histogram_is_rebuilt_exactly(obs: dict[str, list[float]], legacy: int) -> None:
    """Whether a store kept its observations the old way (cumulative), the new way (one bin
    each) or both (upgraded midway), the histogram is the same."""
    rows = _observed(obs, legacy)
    series = {s.labels: s for s in histogram_series(DURATION, rows, CYCLE_DURATION_BUCKETS)}
    assert set(series) == {(d,) for d in obs}
    for driver, ds in obs.items():
        h = series[(driver,)]
        assert h.sum == pytest.approx(sum(ds))
        for le, count in h.buckets:
            assert count == sum(1 for d in ds if d <= float(le)), le
        assert h.buckets[-1] == ("+Inf", len(ds))


counter_rows = st.lists(
    st.tuples(
        st.sampled_from([f"cycle_duration_seconds_{s}" for s in ("bucket", "bin", "count")] + ["other"]),
        st.fixed_dictionaries(
            {"driver": drivers},
            optional={"le": st.sampled_from(["1.0", "5.0", "7.5", "+Inf", "bogus"])},
        ),
        st.floats(0, 1e6),
    ),
    max_size=40,
)


@given(counter_rows)
def test_histogram_is_always_valid(rows: list[tuple[str, dict[str, str], float]]) -> None:
    """Whatever the rows, the output is cumulative, sorted, ends in +Inf and covers the count."""
    for h in histogram_series(DURATION, rows, CYCLE_DURATION_BUCKETS):
        bounds = [math.inf if le == "+Inf" else float(le) for le, _ in h.buckets]
        counts = [c for _, c in h.buckets]
        assert bounds == sorted(bounds) and bounds[-1] == math.inf
        assert {*CYCLE_DURATION_BUCKETS} <= set(bounds)
        assert counts == sorted(counts)
        count = sum(v for n, lbl, v in rows if n.endswith("_count") and lbl["driver"] == h.labels[0])
        assert counts[-1] >= count


label_values = st.text(alphabet="abc-_ ", max_size=4)
any_rows = st.lists(
    st.tuples(
        st.sampled_from(sorted(COUNTERS)),
        st.dictionaries(
            st.sampled_from(["agent", "model", "kind", "detector", "verdict", "extra"]),
            st.one_of(label_values, st.sampled_from(["stuck", "healthy"])),
            max_size=4,
        ),
        st.floats(0, 1e9),
    ),
    max_size=40,
)


@given(any_rows)
def test_counters_keep_every_increment_under_the_declared_labels(
    rows: list[tuple[str, dict[str, str], float]],
) -> None:
    for m in CATALOGUE:
        if m.source != "aggregate" or m.kind != "counter":
            continue
        series = counter_series(m, rows)
        mine = [v for n, _, v in rows if n == m.aggregate_key]
        assert sum(s.value for s in series) == pytest.approx(sum(mine))
        assert len({s.labels for s in series}) == len(series)
        assert all(len(s.labels) == len(m.labels) for s in series)
        if m.fill is not None:  # every value of the fill label next to each other label set
            at = m.labels.index(m.fill[0])
            have = {s.labels for s in series}
            for lbl in have:
                assert all((*lbl[:at], v, *lbl[at + 1 :]) in have for v in m.fill[1])


readings = st.lists(
    st.builds(
        DaemonReading,
        driver=drivers,
        host=st.sampled_from(["h1", "h2"]),
        state=st.sampled_from(DAEMON_STATES),
        last_heartbeat_at=st.datetimes(
            min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
        ),
        in_flight=st.booleans(),
    ),
    max_size=6,
    unique_by=lambda r: (r.driver, r.host),
)


@given(readings, st.floats(1, 10_000))
def test_daemon_gauges_agree(daemons: list[DaemonReading], threshold: float) -> None:
    fams = {f.metric.name: f.series for f in derive(StoreReads(threshold, daemons))}

    def gauge(name: str) -> dict[tuple[str, ...], float]:
        return {s.labels: s.value for s in fams[name] if isinstance(s, Series)}

    up, long = gauge("octel_daemon_up"), gauge("octel_running_long_worker")
    state = gauge("octel_daemon_state")
    for d in daemons:
        key = (d.driver, d.host)
        assert sum(state[(*key, s)] for s in DAEMON_STATES) == 1
        assert state[(*key, d.state)] == 1
        assert up[key] == (0 if d.state == "down" else 1)
        assert long[key] == (d.state == "running_long_worker")
        assert gauge("octel_daemon_heartbeat_timestamp_seconds")[key] == d.last_heartbeat_at.timestamp()
    assert gauge("octel_long_worker_threshold_seconds") == {(): threshold}
    # Every catalogue family that is not the process's own is derived, histograms as histograms.
    assert set(fams) == {m.name for m in CATALOGUE if m.source != "process"}
    assert all(isinstance(s, HistogramSeries) for s in fams["octel_cycle_duration_seconds"])


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path: Path = tmp_path_factory.mktemp("snap") / "octel.db"
    eng = make_engine(f"sqlite:///{path}")
    upgrade(eng)
    yield eng
    eng.dispose()


daemon_rows = st.lists(
    st.tuples(
        drivers,
        st.sampled_from(["h1", "h2"]),
        st.sampled_from(["http", "file"]),
        st.integers(0, 2000),  # heartbeat age, seconds
        st.sampled_from([None, "c-open", "c-done", "c-unknown", "c-other-driver"]),
        st.sampled_from(["alive", "dead", "unknown"]),
    ),
    max_size=5,
    unique_by=lambda r: (r[0], r[1]),
)
open_drivers = st.sets(drivers)


@settings(max_examples=40, deadline=None)
@given(daemon_rows, open_drivers)
def test_bulk_daemon_states_match_api_health(
    sqlite_engine: Engine, daemons: list[tuple[str, str, str, int, str | None, Liveness]], opened: set[str]
) -> None:
    with session_scope(sqlite_engine) as db:
        db.execute(delete(Daemon))
        db.execute(delete(Cycle))
        for driver in opened:
            db.add(Cycle(cycle_id=f"{driver}-o", driver=driver, started_at=NOW, updated_at=NOW))
        for driver in ("review", "impl", "triage"):
            db.add(Cycle(cycle_id=f"{driver}-d", driver=driver, started_at=NOW, ended_at=NOW, updated_at=NOW))
        db.add(Cycle(cycle_id="c-other-driver", driver="zzz", started_at=NOW, updated_at=NOW))
        for pid, (driver, host, source, age, cycle, _) in enumerate(daemons, start=1):
            named = {"c-open": f"{driver}-o", "c-done": f"{driver}-d"}.get(cycle or "", cycle)
            beat = NOW - timedelta(seconds=age)
            db.add(
                Daemon(
                    driver=driver,
                    host=host,
                    pid=pid,
                    source=source,
                    in_flight_cycle_id=named,
                    last_heartbeat_at=beat,
                    first_seen_at=beat,
                )
            )
    lives = {pid: d[5] for pid, d in enumerate(daemons, start=1)}

    def liveness(host: str, pid: int | None) -> Liveness:
        return lives[pid or 0]

    with session_scope(sqlite_engine, write=False) as db:
        api = daemon_health(db, NOW, 600, liveness)
        ours = read_store(db, NOW, 600, liveness).daemons
    assert [(h.driver, h.host, h.state, h.in_flight_cycle is not None) for h in api] == [
        (r.driver, r.host, r.state, r.in_flight) for r in ours
    ]
