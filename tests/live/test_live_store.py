"""Live rows in the store (SQLite and PostgreSQL): upserted per (server, session), redacted,
linked to the cycle that names the session, live findings kept, forgotten rows deleted."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.queries.live import list_live, live_change
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.models import Cycle, Finding
from telemetry.timeutil import utcnow
from telemetry.tower.live import forget_live, store_live_rows
from tower.live_board import LiveBoard

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"
SECRET = "hunter2-very-secret-value"


def _board_waiting() -> tuple[LiveBoard, str, float]:
    fx = orjson.loads((FIXTURES / "permission_deadlock.json").read_bytes())
    board = LiveBoard("http://oc:4096", lambda s: s)
    t = 0.0
    for e in fx["events"]:
        t = e["received"] / 1000.0
        ev = e["event"]
        if ev["type"] == "permission.asked":
            ev = {**ev, "properties": {**ev["properties"], "patterns": [f"curl -H 'X: {SECRET}' x"]}}
        board.on_event(ev, t)
        if ev["type"] == "permission.asked":
            break
    return board, fx["root_id"], t


def test_rows_are_upserted_redacted_and_linked_to_their_cycle(engine: Engine) -> None:
    board, root, t = _board_waiting()
    with session_scope(engine) as db:
        db.add(
            Cycle(
                cycle_id="impl-2003",
                driver="implementer",
                session_id=root,
                started_at=datetime.now(UTC),
                updated_at=datetime.now(UTC),
            )
        )
    redactor = Redactor(b"k" * 32, [SECRET])
    with session_scope(engine) as db:
        assert store_live_rows(db, board.snapshot(t + 120), redactor=redactor).new == 1
    with session_scope(engine) as db:
        assert store_live_rows(db, board.snapshot(t + 240), redactor=redactor).new == 0  # same row again
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(LiveSession)))
        found = list(db.exec(select(Finding).where(Finding.source == "live")))
    assert len(rows) == 1
    row = rows[0]
    assert row.state == "waiting_permission" and row.permission == "bash"
    assert row.cycle_id == "impl-2003" and row.driver == "implementer"
    assert SECRET not in orjson.dumps(row.permission_patterns).decode()
    assert row.verdict == "stuck" and row.worst_detector == "permission_deadlock"
    assert {f.detector for f in found} == {"permission_deadlock"}
    assert SECRET not in orjson.dumps([f.evidence for f in found]).decode()
    with session_scope(engine) as db:
        assert forget_live(db, "http://oc:4096", [root, "ses_other"]) == 1
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(LiveSession))) == []


def test_the_watch_json_line_is_the_api_live_row_and_the_state_it_left(engine: Engine) -> None:
    """`octel watch --json` prints the row `sessions list --live --json` and the API give, from
    the stored (redacted) row, and the state it left: one definition of a live row."""
    board, _root, t = _board_waiting()
    redactor = Redactor(b"k" * 32, [SECRET])
    rows = board.snapshot(t + 120)
    with session_scope(engine) as db:
        stored = store_live_rows(db, rows, redactor=redactor)
    now = utcnow()
    line = live_change(stored.rows[0], rows[0].previous_state, now)
    with session_scope(engine, write=False) as db:
        api = list_live(db, now).items[0]
    assert line.model_dump(exclude={"previous_state"}) == api.model_dump()
    assert line.previous_state is None and line.ask is not None and line.ask.permission == "bash"
    assert SECRET not in line.model_dump_json() and "waiting" in line.explanation
