"""Any interleaving of begin, finish, heartbeat and retries keeps the store's invariants."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule
from sqlmodel import func, select
from store_templates import migrate_by_copy

from archiver.redact import Redactor
from telemetry.services.ingest import ingest
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Aggregate, Cycle, Daemon
from telemetry.timeutil import as_utc

T0 = datetime(2026, 11, 1, tzinfo=UTC)
# 40 runs of 30 steps, each checked against the store: the suite's longest test without a
# real part, so the quick subset leaves it to the full run
pytestmark = pytest.mark.slow
RED = Redactor(b"k" * 32)  # every stored input passes a redactor
DRIVERS = st.sampled_from(["review", "implementer"])


class IngestMachine(RuleBasedStateMachine):
    """A model of what was sent, checked against the store after every step."""

    cycles = Bundle("cycles")

    def __init__(self) -> None:
        super().__init__()
        import tempfile

        self.dir = Path(tempfile.mkdtemp(prefix="octel-sm-"))
        url = f"sqlite:///{self.dir / 'o.db'}"
        migrate_by_copy(url)  # a fresh store at head for each example, copied, not migrated
        self.engine = make_engine(url)
        upgrade(self.engine)
        self.clock = T0
        self.begun: dict[str, str] = {}  # cycle id -> driver
        self.finished: set[str] = set()
        self.beats: dict[tuple[str, str], datetime] = {}

    def _tick(self, seconds: int) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    @rule(
        target=cycles, cid=st.text("abcdef", min_size=1, max_size=3), driver=DRIVERS, gap=st.integers(0, 100)
    )
    def begin(self, cid: str, driver: str, gap: int) -> str:
        now = self._tick(gap)
        owner = self.begun.get(cid, driver)
        with session_scope(self.engine) as db:
            ingest.begin_cycle(
                db, ingest.CycleBegin(cycle_id=cid, driver=owner, started_at=now), now, redactor=RED
            )
        self.begun.setdefault(cid, owner)
        return cid

    @rule(
        cid=cycles,
        state=st.sampled_from(["done", "failed", "timeout"]),
        gap=st.integers(0, 1000),
        retry=st.booleans(),
    )
    def finish(self, cid: str, state: str, gap: int, retry: bool) -> None:
        now = self._tick(gap)
        p = ingest.CycleFinish(cycle_id=cid, driver=self.begun[cid], terminal_state=state, ended_at=now)
        for _ in range(2 if retry else 1):
            with session_scope(self.engine) as db:
                ingest.finish_cycle(db, p, now, redactor=RED)
        self.finished.add(cid)

    @rule(
        cid=st.text("uvwxyz", min_size=1, max_size=3), driver=DRIVERS, wall=st.none() | st.integers(0, 5000)
    )
    def finish_unknown(self, cid: str, driver: str, wall: int | None) -> None:
        now = self._tick(1)
        if cid in self.begun:
            return
        p = ingest.CycleFinish(
            cycle_id=cid, driver=driver, terminal_state="done", ended_at=now, worker_wallclock_seconds=wall
        )
        with session_scope(self.engine) as db:
            ingest.finish_cycle(db, p, now, redactor=RED)
        self.begun[cid] = driver
        self.finished.add(cid)

    @rule(driver=DRIVERS, host=st.sampled_from(["a", "b"]), back=st.integers(-50, 50))
    def beat(self, driver: str, host: str, back: int) -> None:
        at = self._tick(1) + timedelta(seconds=back)  # retries can arrive late and out of order
        with session_scope(self.engine) as db:
            ingest.heartbeat(
                db, ingest.HeartbeatIn(driver=driver, host=host, pid=42, at=at), self.clock, redactor=RED
            )
        key = (driver, host)
        self.beats[key] = max(self.beats.get(key, at), at)

    @invariant()
    def store_matches_what_was_sent(self) -> None:
        with session_scope(self.engine, write=False) as db:
            rows = db.exec(select(Cycle)).all()
            assert sorted(r.cycle_id for r in rows) == sorted(self.begun)  # unique ids, none lost
            for r in rows:
                assert r.driver == self.begun[r.cycle_id]
                assert (r.ended_at is not None) == (r.cycle_id in self.finished)
                if r.ended_at is not None and not r.start_synthesised:
                    assert as_utc(r.ended_at) >= as_utc(r.started_at)
            done = db.exec(select(func.sum(Aggregate.value)).where(Aggregate.metric == "cycles_total")).one()
            assert (done or 0) == len(self.finished)  # each finish counted exactly once
            beats = {(d.driver, d.host): as_utc(d.last_heartbeat_at) for d in db.exec(select(Daemon)).all()}
            assert beats == self.beats

    def teardown(self) -> None:
        self.engine.dispose()
        import shutil

        shutil.rmtree(self.dir, ignore_errors=True)


IngestMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestIngestInvariants = IngestMachine.TestCase
