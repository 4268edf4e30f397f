"""`/api/costs` adds the spend so far of sessions running now, apart and counted once: a session
not archived yet counts whole, one archived and running again only past its archive, and the
window's totals (archived spend) do not move."""

from __future__ import annotations

from datetime import timedelta

from console_seed import Store
from fastapi.testclient import TestClient
from sqlmodel import select

from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex
from telemetry.timeutil import utcnow


def _live(store: Store, session_id: str, cost: float, title: str) -> None:
    now = utcnow()
    engine = make_engine(store.settings.db_url)
    try:
        with session_scope(engine) as db:
            db.add(
                LiveSession(
                    server="http://127.0.0.1:4096",
                    session_id=session_id,
                    title=title,
                    state="running_tool",
                    tool="bash",
                    state_since=now - timedelta(minutes=12),
                    cost_usd=cost,
                    first_seen_at=now,
                    updated_at=now,
                )
            )
    finally:
        engine.dispose()


def _archived_cost(store: Store, session_id: str) -> float:
    engine = make_engine(store.settings.db_url)
    try:
        with session_scope(engine, write=False) as db:
            row = db.exec(select(SessionIndex).where(SessionIndex.session_id == session_id)).one()
            return row.cost_usd
    finally:
        engine.dispose()


def test_live_spend_is_shown_apart_and_counted_once(client: TestClient, store: Store) -> None:
    before = client.get("/api/costs").json()
    already = before.get("live") or {"cost_usd": 0.0, "count": 0, "sessions": []}
    again = store.seeded.scenarios["doom_loop"]
    archived = _archived_cost(store, again)
    _live(store, "ses_neverarchived000000000001", 4.93, "the loop")
    _live(store, again, archived + 0.25, "running again")
    got = client.get("/api/costs").json()
    assert got["totals"] == before["totals"]  # archived spend: the live rows are not in it
    rows = {s["session_id"]: s for s in got["live"]["sessions"]}
    assert rows["ses_neverarchived000000000001"]["cost_usd"] == 4.93
    assert not rows["ses_neverarchived000000000001"]["archived"]
    assert abs(rows[again]["cost_usd"] - 0.25) < 1e-6 and rows[again]["archived"]
    assert got["live"]["count"] == already["count"] + 2
    assert abs(got["live"]["cost_usd"] - (already["cost_usd"] + 4.93 + 0.25)) < 1e-6
    # a window that ended before now has no live spend in it
    assert "live" not in client.get("/api/costs", params={"until": "1h"}).json()
