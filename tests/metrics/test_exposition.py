"""The scrape's own text writer and its grouped reads, property-tested against the originals:
prometheus-client's `generate_latest` (byte for byte) and one counter pass per family."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric as PromFamily

from telemetry.metrics.catalogue import CATALOGUE
from telemetry.metrics.live import LiveGroup, fold_live
from telemetry.metrics.snapshot import Family, HistogramSeries, Series, StoreReads, counter_series, derive
from telemetry.store.aggregates import COUNTERS
from tower.live import STATES
from web.exposition import render
from web.metrics import _to_prometheus

# label values a user could send: quotes, backslashes, newlines, any Unicode
texts = st.text(max_size=6)
numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**60), 2**60).map(float))


@st.composite
def families(draw: st.DrawFn) -> Family:
    m = draw(st.sampled_from(CATALOGUE))
    labels = st.tuples(*[texts for _ in m.labels])
    if m.kind == "histogram":
        bounds = sorted(draw(st.sets(st.floats(0, 1e6), max_size=4)))
        les = [repr(b) for b in bounds] + ["+Inf"]
        series: tuple[Series, ...] | tuple[HistogramSeries, ...] = tuple(
            HistogramSeries(lbl, tuple((le, draw(numbers)) for le in les), draw(numbers))
            for lbl in draw(st.lists(labels, max_size=3))
        )
    else:
        series = tuple(Series(lbl, draw(numbers)) for lbl in draw(st.lists(labels, max_size=4)))
    return Family(m, series)


class _Fixed:
    def __init__(self, fams: list[Family]) -> None:
        self.fams = fams

    def collect(self) -> Iterator[PromFamily]:
        for f in self.fams:
            yield _to_prometheus(f)


@given(st.lists(families(), max_size=5))
def test_render_writes_what_prometheus_client_writes(fams: list[Family]) -> None:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Fixed(fams))  # type: ignore[arg-type]
    assert render(fams).encode() == generate_latest(registry)


label_values = st.sampled_from(["", "a", "b", "stuck", "healthy", "input", "cache_read"])
any_rows = st.lists(
    st.tuples(
        st.sampled_from(sorted(COUNTERS)),
        st.dictionaries(st.sampled_from(["agent", "model", "kind", "driver", "le", "extra"]), label_values),
        st.floats(0, 1e9),
    ),
    max_size=60,
)


@given(any_rows)
def test_derive_groups_rows_as_one_pass_per_family_would(
    rows: list[tuple[str, dict[str, str], float]],
) -> None:
    got = {f.metric.name: f.series for f in derive(StoreReads(600.0, counters=rows))}
    for m in CATALOGUE:
        if m.source == "aggregate" and m.kind == "counter":
            assert got[m.name] == counter_series(m, rows)  # every row offered, filtered by name


times = st.none() | st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
# server, state, permission asked, last activity, state since, retry attempt
sessions = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2"]),
        st.sampled_from(STATES),
        times,
        times,
        times,
        st.none() | st.integers(0, 9),
    ),
    max_size=30,
)


def _ts(t: datetime | None) -> float | None:
    return None if t is None else t.timestamp()


@given(sessions)
def test_fold_live_equals_a_query_per_gauge(rows: list[tuple]) -> None:  # type: ignore[type-arg]
    """One grouped read gives what the former query per gauge (filtered by state) gave."""
    groups: dict[tuple[str, str], list[tuple]] = {}  # type: ignore[type-arg]
    for r in rows:
        groups.setdefault((r[0], r[1]), []).append(r)

    def lo(xs: list[datetime | None]) -> datetime | None:
        return min((x for x in xs if x is not None), default=None)

    folded = fold_live(
        [
            LiveGroup(
                server,
                state,
                len(rs),
                lo([r[2] for r in rs]),
                lo([r[3] or r[4] for r in rs]),
                max((r[5] for r in rs if r[5] is not None), default=None),
                lo([r[4] for r in rs]),
            )
            for (server, state), rs in groups.items()
        ],
        [],
    )

    def per_server(state: str, pick: object) -> set[tuple[str, float]]:
        out = {}
        for (server, st_), rs in groups.items():
            if st_ == state and (t := _ts(pick(rs))) is not None:  # type: ignore[operator]
                out[server] = t
        return set(out.items())

    assert set(folded.oldest_ask) == per_server("waiting_permission", lambda rs: lo([r[2] for r in rs]))
    assert set(folded.oldest_busy_activity) == per_server("busy", lambda rs: lo([r[3] or r[4] for r in rs]))
    assert set(folded.retry_since) == per_server("retrying", lambda rs: lo([r[4] for r in rs]))
    assert {s for s, _ in folded.retry_attempt} == {s for s, st_ in groups if st_ == "retrying"}
    assert sorted(folded.counts) == sorted((s, st_, len(rs)) for (s, st_), rs in groups.items())
