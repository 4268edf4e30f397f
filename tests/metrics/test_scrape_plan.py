"""A scrape never scans history: every query it runs on a big table searches an index.

Checked by SQLite's own query planner on a store with history in it, so a later change to a
query (or a missing index) fails here rather than on a fleet with a million cycles.
"""

from __future__ import annotations

import socket
from datetime import timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event, insert, text

from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle, Daemon
from telemetry.timeutil import utcnow
from web.app import create_app
from web.app_state import app_state

_SMALL = {"daemon", "aggregate"}  # one row per daemon / per counter label set: may be read whole
# Sessions running now and those of trees archived in the last hours (the watcher deletes the
# rest): bounded by the fleet's size, never by history, so counting it per state is fine.
_SMALL |= {"live_session"}
_SMALL |= {"watch_lease"}  # one row per followed server: whose live rows nobody follows now
# A search of a big table must pin a column that picks few rows: one id, or the open cycles.
# Searching by driver alone would walk that driver's whole history.
_SELECTIVE = ("cycle_id=?", "ended_at=?", "session_id=?", "rowid=?")
# A partial index holding the open cycles alone may be read whole: its size is what is in
# flight now, never history.
_OPEN_ONLY = ("USING COVERING INDEX ix_cycle_in_flight",)


def _seed(engine: Any) -> None:
    now = utcnow()
    rows = [
        {
            "cycle_id": f"c{i}",
            "driver": f"d{i % 4}",
            "started_at": now - timedelta(seconds=i),
            "ended_at": None if i % 500 == 0 else now,
            "terminal_state": None if i % 500 == 0 else "done",
            "start_synthesised": False,
            "updated_at": now,
        }
        for i in range(3000)
    ]
    with session_scope(engine) as db:
        db.execute(insert(Cycle), rows)
        host = socket.gethostname()
        for i, source in enumerate(("http", "file", "http")):
            db.add(
                Daemon(
                    driver=f"d{i}",
                    host=host,
                    pid=1,
                    last_heartbeat_at=now,
                    first_seen_at=now,
                    source=source,
                    in_flight_cycle_id="c500" if i == 0 else None,
                )
            )
        db.execute(text("ANALYZE"))


def test_scrape_queries_search_indexes(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=f"sqlite:///{tmp_path / 'octel.db'}",
        ingest_token="test-token-0123456789",
        _env_file=None,
    )
    with TestClient(create_app(settings)) as client:
        engine = app_state(client.app).engine
        _seed(engine)
        seen: list[tuple[str, Any]] = []

        def capture(conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
            # The server's refresh of planner statistics runs beside the scrape and reads
            # SQLite's own `sqlite_stat1` whole: not a scrape query, and not history.
            if statement.lstrip().upper().startswith("SELECT") and "sqlite_stat1" not in statement:
                seen.append((statement, params))

        event.listen(engine, "before_cursor_execute", capture)
        assert client.get("/metrics").status_code == 200
        event.remove(engine, "before_cursor_execute", capture)
        assert any("FROM cycle" in s for s, _ in seen)  # the open cycles and the in-flight ones
        with engine.connect() as conn:
            for statement, params in seen:
                plan = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, params).all()
                for row in plan:
                    detail: str = row[-1]
                    verb, table = detail.split()[:2]
                    if verb not in {"SCAN", "SEARCH"} or table in _SMALL:
                        continue
                    if any(detail.endswith(i) for i in _OPEN_ONLY):
                        continue
                    assert verb == "SEARCH", f"{detail!r} in {statement}"
                    assert any(c in detail for c in _SELECTIVE), f"{detail!r} in {statement}"
