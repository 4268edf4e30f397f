"""8 writers by 500 cycles at once through a live `octel serve`: exactly 4,000 rows."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
from liveserver import live_octel
from sqlmodel import func, select

from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import Aggregate, Cycle

WRITERS, PER_WRITER = 8, 500
TOKEN = {"Authorization": "Bearer test-token-0123456789"}


def _writer(base: str, w: int) -> int:
    ok = 0
    with httpx.Client(base_url=base, headers=TOKEN, timeout=60) as c:
        for i in range(PER_WRITER):
            cid = f"w{w}-c{i}"
            r = c.post("/api/v1/cycles/begin", json={"cycle_id": cid, "driver": f"d{w % 3}"})
            ok += r.status_code == 201
            if i % 5 == 0:  # some finish, and some finishes are retried
                body = {"cycle_id": cid, "driver": f"d{w % 3}", "terminal_state": "done"}
                c.post("/api/v1/cycles/finish", json=body)
                if i % 10 == 0:
                    c.post("/api/v1/cycles/finish", json=body)
    return ok


def test_concurrent_writers_lose_and_double_nothing(tmp_path: Path, store_url: str) -> None:
    with live_octel(tmp_path / "data", store_url) as base, ThreadPoolExecutor(WRITERS) as pool:
        created = sum(pool.map(_writer, [base] * WRITERS, range(WRITERS)))
    assert created == WRITERS * PER_WRITER
    engine = make_engine(store_url)
    with session_scope(engine, write=False) as db:
        assert db.exec(select(func.count()).select_from(Cycle)).one() == WRITERS * PER_WRITER
        assert db.exec(select(func.count(func.distinct(Cycle.cycle_id)))).one() == WRITERS * PER_WRITER
        finished = db.exec(select(func.sum(Aggregate.value)).where(Aggregate.metric == "cycles_total")).one()
    engine.dispose()
    assert finished == WRITERS * PER_WRITER // 5
