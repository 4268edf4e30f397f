"""What `/api/health` shows of many open cycles: the newest few per driver, the rest counted."""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from telemetry.queries.health_view import bounded_daemons

_row = st.fixed_dictionaries(
    {
        "driver": st.sampled_from(["impl", "review", "night ly"]),
        "source": st.sampled_from(["cycle", "cycle", "http", "file"]),
        "state": st.sampled_from(["ok", "down", "unknown", "running_long_worker"]),
        "in_flight_cycle": st.one_of(
            st.none(),
            st.builds(
                lambda s: {"started_at": f"2026-11-{s:02d}T00:00:00+00:00"},
                st.integers(min_value=1, max_value=30),
            ),
        ),
    }
)


@given(st.lists(_row, max_size=40), st.integers(min_value=0, max_value=5))
def test_daemons_stay_and_cycle_rows_are_the_newest_few_with_the_rest_counted(
    rows: list[dict[str, Any]], per_driver: int
) -> None:
    shown, more = bounded_daemons(rows, per_driver)
    assert [r for r in rows if r["source"] != "cycle"] == [r for r in shown if r["source"] != "cycle"]
    assert [r for r in rows if any(r is s for s in shown)] == shown  # order kept
    cycle_rows = Counter(r["driver"] for r in rows if r["source"] == "cycle")
    kept = Counter(r["driver"] for r in shown if r["source"] == "cycle")
    left = {m["driver"]: m for m in more}
    for driver, n in cycle_rows.items():
        assert kept[driver] == min(n, per_driver)
        assert (left[driver]["cycles"] if driver in left else 0) == n - kept[driver]
    for m in more:
        out = [
            r
            for r in rows
            if r["source"] == "cycle" and r["driver"] == m["driver"] and not any(r is s for s in shown)
        ]
        assert m["orphaned"] == sum(r["state"] == "down" for r in out)
        assert m["in_flight"] + m["orphaned"] == m["cycles"]
        assert m["cycles_url"].startswith("/api/cycles?driver=") and " " not in m["cycles_url"]
        newest_left = max((r["in_flight_cycle"] or {}).get("started_at") or "" for r in out)
        shown_mine = [r for r in shown if r["source"] == "cycle" and r["driver"] == m["driver"]]
        assert all(((r["in_flight_cycle"] or {}).get("started_at") or "") >= newest_left for r in shown_mine)
