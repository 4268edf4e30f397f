"""The live metrics from live rows (SQLite and PostgreSQL), and their pure derivation."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st
from metrics_helpers import seed_live
from sqlalchemy.engine import Engine

from telemetry.metrics.live import LiveReads, live_series, read_live
from telemetry.store.db import session_scope
from tower.live import STATES


def test_live_reads_from_the_store(engine: Engine) -> None:
    seed_live(engine, server="http://a:1", minutes_ago=20)
    with session_scope(engine, write=False) as db:
        reads = read_live(db)
    sessions = dict(live_series("octel_live_sessions", reads))
    assert (
        sessions[("http://a:1", "waiting_permission")] == 1.0 and sessions[("http://a:1", "deleted")] == 0.0
    )
    assert len(sessions) == len(STATES)
    (((server,), asked),) = live_series("octel_live_ask_oldest_timestamp_seconds", reads)
    assert server == "http://a:1" and 1190 < time.time() - asked < 1260
    assert live_series("octel_live_retry_attempt_max", reads) == [(("http://a:1",), 6.0)]
    (((_,), quiet),) = live_series("octel_live_busy_oldest_activity_timestamp_seconds", reads)
    assert 1190 < time.time() - quiet < 1260
    found = dict(live_series("octel_live_findings", reads))
    assert found == {("permission_deadlock", "stuck"): 1.0, ("permission_deadlock", "suspect"): 0.0}
    assert live_series("octel_live_server_info", reads) == [(("http://a:1", "1", "1.18.33"), 1.0)]


_COUNTS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(STATES), st.integers(1, 9)), max_size=10
)


@given(_COUNTS)
def test_every_state_of_a_server_is_shown_and_counts_are_kept(counts: list[tuple[str, str, int]]) -> None:
    unique = {(s, st): n for s, st, n in counts}
    rows = dict(
        live_series(
            "octel_live_sessions", LiveReads(counts=tuple((s, st, n) for (s, st), n in unique.items()))
        )
    )
    servers = {s for s, _ in unique}
    assert set(rows) == {(s, st) for s in servers for st in STATES}
    assert sum(rows.values()) == sum(unique.values())
