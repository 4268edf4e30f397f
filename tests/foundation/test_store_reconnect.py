"""A pooled PostgreSQL connection that died while it sat idle (the server restarted, a
firewall dropped it) is replaced when it is next checked out: the request never sees it.
One checked out again at once is not pinged (`telemetry.store.db`): a busy server would pay a
round trip per request."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, IntegrityError

from telemetry.store import db as store_db
from telemetry.store import pg_direct
from telemetry.store.db import make_engine, session_scope

pytestmark = pytest.mark.postgres


def _backend_pid(engine: object) -> int:
    with session_scope(engine, write=False) as s:  # type: ignore[arg-type]
        return int(s.connection().execute(text("SELECT pg_backend_pid()")).scalar_one())


def test_a_connection_killed_while_idle_is_replaced(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(pg_url)
    other = make_engine(pg_url)
    try:
        pid = _backend_pid(engine)  # now idle in the pool
        with other.connect() as c:
            assert c.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
        monkeypatch.setattr(store_db, "IDLE_PING_SECONDS", 0.0)  # it has sat long enough
        assert _backend_pid(engine) != pid  # answered, on a new connection
    finally:
        engine.dispose()
        other.dispose()


def test_a_connection_killed_a_moment_ago_fails_once_then_the_pool_reconnects(pg_url: str) -> None:
    """Back in the pool a moment ago, so not pinged: its next statement fails, SQLAlchemy drops
    the pool, and the next checkout connects afresh (the group commit writes such a batch
    again, alone)."""
    engine = make_engine(pg_url)
    other = make_engine(pg_url)
    try:
        pid = _backend_pid(engine)
        with other.connect() as c:
            assert c.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
        with pytest.raises(DBAPIError) as failed:
            _backend_pid(engine)
        assert failed.value.connection_invalidated
        assert _backend_pid(engine) != pid
    finally:
        engine.dispose()
        other.dispose()


def test_a_statement_sent_by_psycopg_itself_fails_as_sqlalchemys_would(pg_url: str) -> None:
    """The ingestion statements sent past SQLAlchemy (`pg_direct`) fail as SQLAlchemy's own
    would: a duplicate is an `IntegrityError` (which the group commit retries), and a killed
    connection is invalidated, so the next checkout connects afresh."""
    engine = make_engine(pg_url)
    other = make_engine(pg_url)
    try:
        with session_scope(engine) as s, pytest.raises(IntegrityError):
            conn = s.connection()
            pg_direct.execute(conn, "CREATE TEMPORARY TABLE t (k text PRIMARY KEY)", [])
            pg_direct.execute(conn, "INSERT INTO t VALUES (%s), (%s)", ["a", "a"])
        pid = _backend_pid(engine)
        with other.connect() as c:
            assert c.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid}).scalar_one()
        with pytest.raises(DBAPIError) as failed, session_scope(engine) as s:
            pg_direct.execute(s.connection(), "SELECT 1", [], rows=True)
        assert failed.value.connection_invalidated
        assert _backend_pid(engine) != pid
        with session_scope(engine) as s:
            assert pg_direct.execute(s.connection(), "SELECT %s::int + 1", [41], rows=True) == [(42,)]
    finally:
        engine.dispose()
        other.dispose()
