"""What `/api/health` shows of many open cycles: the newest few per driver, the rest counted."""

from __future__ import annotations

from collections import Counter

from health_oracle import bounded
from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.fleet_models import FlightCycle
from telemetry.queries.health import DaemonHealth


def _row(driver: str, source: str, state: str, day: int | None) -> DaemonHealth:
    flight = (
        None
        if day is None
        else FlightCycle(
            cycle_id="c",
            started_at=f"2026-11-{day:02d}T00:00:00+00:00",
            session_id=None,
            candidates_count=None,
            elapsed_s=None,
        )
    )
    return DaemonHealth(driver, "h", None, state, "why", source, None, None, flight)  # type: ignore[arg-type]


_rows = st.lists(
    st.builds(
        _row,
        st.sampled_from(["impl", "review", "night ly"]),
        st.sampled_from(["cycle", "cycle", "http", "file"]),
        st.sampled_from(["ok", "down", "unknown", "running_long_worker"]),
        st.one_of(st.none(), st.integers(1, 30)),
    ),
    max_size=40,
)


@given(_rows, st.integers(min_value=0, max_value=5))
def test_daemons_stay_and_cycle_rows_are_the_newest_few_with_the_rest_counted(
    rows: list[DaemonHealth], per_driver: int
) -> None:
    shown, more = bounded(rows, per_driver)
    assert [r for r in rows if r.source != "cycle"] == [r for r in shown if r.source != "cycle"]
    assert [r for r in rows if any(r is s for s in shown)] == shown  # order kept
    cycle_rows = Counter(r.driver for r in rows if r.source == "cycle")
    kept = Counter(r.driver for r in shown if r.source == "cycle")
    left = {m["driver"]: m for m in more}
    for driver, n in cycle_rows.items():
        assert kept[driver] == min(n, per_driver)
        assert (left[driver]["cycles"] if driver in left else 0) == n - kept[driver]
    for m in more:
        mine = [r for r in rows if r.source == "cycle" and r.driver == m["driver"]]
        out = [r for r in mine if not any(r is s for s in shown)]
        assert m["orphaned"] == sum(r.state == "down" for r in out)
        assert m["in_flight"] + m["orphaned"] == m["cycles"]
        assert m["cycles_url"].startswith("/api/cycles?driver=") and " " not in m["cycles_url"]

        def day(r: DaemonHealth) -> str:
            return str(r.in_flight_cycle.started_at or "") if r.in_flight_cycle else ""

        newest_left = max(day(r) for r in out)
        assert all(day(r) >= newest_left for r in mine if any(r is s for s in shown))
