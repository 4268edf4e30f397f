"""`/api/health`'s bounded answer, counted and picked by the store, is the whole fleet's cut down by
`bounded`: the same rows in the same order, the same counts and the same rest per driver."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from health_oracle import bounded
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete, event, insert, text
from sqlmodel import Session
from store_templates import migrate_by_copy

from telemetry.queries.fleet_models import Health
from telemetry.queries.health import STATES, Liveness, fleet_rows
from telemetry.queries.health_view import fleet_health
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Cycle, Daemon

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
DRIVERS = ["impl", "review", "night ly"]
HOSTS = ["h1", "h2"]


def liveness(host: str, pid: int | None) -> Liveness:
    """Pids 1-3 are dead, 4-6 alive, the rest unknown (host `h2` knows nothing)."""
    if pid is None or host == "h2":
        return "unknown"
    return "dead" if pid <= 3 else "alive" if pid <= 6 else "unknown"


def _answer(got: Health) -> dict[str, Any]:
    """The health answer as its JSON, less the time and threshold it was asked with."""
    return got.model_dump(exclude={"now", "long_worker_seconds"})


def _whole(db: Session, per_driver: int) -> dict[str, Any]:
    """The answer as every row of `fleet_rows`, then `bounded`, would give it."""
    fleet = fleet_rows(db, NOW, 600, liveness)
    counts = {s: sum(d.state == s for d in fleet.rows) for s in STATES}
    rows, more = bounded(fleet.rows, per_driver)
    return {
        "status": STATES[max((STATES.index(d.state) for d in fleet.rows), default=0)],
        "counts": counts,
        "cycles_in_flight": fleet.cycles_in_flight,
        "cycles_orphaned": fleet.cycles_orphaned,
        "more_open_cycles": more,
        "daemons": [d.record().model_dump() for d in rows],
    }


_cycles = st.lists(
    st.tuples(
        st.sampled_from(DRIVERS),
        st.sampled_from([*HOSTS, None]),
        st.integers(1, 9),
        st.booleans(),  # open
    ),
    max_size=30,
)
_daemons = st.lists(
    st.tuples(
        st.sampled_from(DRIVERS),
        st.sampled_from(HOSTS),
        st.integers(1, 9),
        st.sampled_from(["http", "file"]),
        st.sampled_from([60, 3600]),  # heartbeat age: fresh or stale
        st.one_of(st.none(), st.integers(0, 40)),  # names the cycle of this index (maybe unknown)
    ),
    max_size=6,
    unique_by=lambda d: (d[0], d[1]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_cycles, _daemons, st.integers(0, 4), st.randoms(use_true_random=False))
def test_the_store_counts_and_picks_what_bounded_would_keep(
    engine: Engine, cycles: list[Any], daemons: list[Any], per_driver: int, rnd: Any
) -> None:
    starts = rnd.sample(range(1, 1000), len(cycles))  # distinct: the rows' order is then one
    with session_scope(engine) as db:
        db.execute(delete(Cycle))
        db.execute(delete(Daemon))
        for i, (driver, host, pid, open_) in enumerate(cycles):
            start = NOW - timedelta(minutes=starts[i])
            end = None if open_ else start + timedelta(seconds=30)
            db.add(
                Cycle(
                    cycle_id=f"c{i}",
                    driver=driver,
                    host=host,
                    pid=pid,
                    started_at=start,
                    ended_at=end,
                    updated_at=start,
                )
            )
        for driver, host, pid, source, age, names in daemons:
            beat = NOW - timedelta(seconds=age)
            named = None if names is None or source == "file" else f"c{names}"
            db.add(
                Daemon(
                    driver=driver,
                    host=host,
                    pid=pid,
                    last_heartbeat_at=beat,
                    in_flight_cycle_id=named,
                    source=source,
                    first_seen_at=beat,
                )
            )
    with session_scope(engine, write=False) as db:
        whole = _whole(db, per_driver)
        got = _answer(fleet_health(db, NOW, 600, liveness, per_driver))
    assert got == whole
    shown = sum(1 for d in got["daemons"] if d["source"] == "cycle")
    assert shown + sum(m["cycles"] for m in got["more_open_cycles"]) == sum(
        1 for d in _whole_rows(engine) if d.source == "cycle"
    )


def _whole_rows(engine: Engine) -> list[Any]:
    with session_scope(engine, write=False) as db:
        return fleet_rows(db, NOW, 600, liveness).rows


def test_a_lone_daemon_takes_the_oldest_open_cycle_and_ties_go_by_host(engine: Engine) -> None:
    """A daemon beating without naming its cycle lives with its driver's oldest open cycle of its
    host or of no host; of the rest, the newest are shown, equal starts taken in the rows' order."""
    tied = NOW - timedelta(minutes=5)
    with session_scope(engine) as db:
        db.execute(delete(Cycle))
        db.execute(delete(Daemon))
        for i, (host, start) in enumerate(
            [
                (None, NOW - timedelta(minutes=50)),
                ("h1", NOW - timedelta(minutes=40)),
                ("h2", tied),
                ("h1", tied),
            ]
        ):
            db.add(
                Cycle(cycle_id=f"c{i}", driver="impl", host=host, pid=2, started_at=start, updated_at=start)
            )
        db.add(
            Daemon(driver="impl", host="h1", pid=5, last_heartbeat_at=NOW, source="http", first_seen_at=NOW)
        )
    with session_scope(engine, write=False) as db:
        whole = _whole(db, 1)
        got = _answer(fleet_health(db, NOW, 600, liveness, 1))
    assert got == whole
    flights = [(d["host"], d["in_flight_cycle"]["cycle_id"]) for d in got["daemons"]]
    assert flights == [("h1", "c0"), ("h1", "c3")]
    assert [(m["cycles"], m["orphaned"]) for m in got["more_open_cycles"]] == [(2, 1)]  # h2 cannot tell


def test_on_sqlite_health_reads_the_open_cycles_never_the_history(sqlite_url: str) -> None:
    """Every statement the bounded answer issues searches the cycle table by id, or reads the
    partial index of the open cycles: a fleet's history never enters the health check."""
    migrate_by_copy(sqlite_url)
    engine = make_engine(sqlite_url)
    upgrade(engine)
    with session_scope(engine) as db:
        rows = [
            {
                "cycle_id": f"c{i}",
                "driver": f"d{i % 3}",
                "host": "h1",
                "pid": 1 + i % 7,
                "started_at": NOW - timedelta(minutes=i),
                "ended_at": None if i % 100 == 0 else NOW,
                "start_synthesised": False,
                "updated_at": NOW,
            }
            for i in range(3000)
        ]
        db.execute(insert(Cycle), rows)
        for i, source in enumerate(("http", "file", "http")):
            named = "c300" if i == 2 else None
            db.add(
                Daemon(
                    driver=f"d{i}",
                    host="h1",
                    pid=9,
                    last_heartbeat_at=NOW,
                    in_flight_cycle_id=named,
                    source=source,
                    first_seen_at=NOW,
                )
            )
        db.execute(text("ANALYZE"))
    seen: list[tuple[str, Any]] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append((statement, params))

    event.listen(engine, "before_cursor_execute", capture)
    with session_scope(engine, write=False) as db:
        got = _answer(fleet_health(db, NOW, 600, liveness, 3))
    event.remove(engine, "before_cursor_execute", capture)
    assert sum(m["cycles"] for m in got["more_open_cycles"]) > 0
    with engine.connect() as conn:
        for statement, params in seen:
            for row in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all():
                detail: str = row[-1]
                if detail.split()[:2] not in (["SCAN", "cycle"], ["SEARCH", "cycle"]):
                    continue
                by_id = any(k in detail for k in ("(rowid=?)", "(cycle_id=?)"))
                assert by_id or "INDEX ix_cycle_in_flight" in detail, f"{detail!r} in {statement}"
    engine.dispose()
