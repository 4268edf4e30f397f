"""Writers of `session_index` find its rows by index, however young the table was when the
server's connections first ran their statements.

psycopg prepares a statement run five times on a connection, and PostgreSQL may keep the
generic plan it made for the table of that moment. Made while `session_index` held a page,
that plan is a scan of the whole table, kept as the table grows until ANALYZE runs on it: after
a burst of archives (an import), each batch of cycle writes scanned it 17 times, each batch of
an import 4 times, each archived tree of 4 sessions 16 times.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from session_records import session_record
from sqlalchemy import insert, select, text
from sqlmodel import Session
from store_templates import migrate_by_copy

from archiver.record import SessionRecord
from archiver.redact import Redactor
from telemetry.services.index.index_batch import index_batch
from telemetry.services.index.indexing import index_records
from telemetry.services.ingest import cycle_rows
from telemetry.services.ingest.ingest import begin_clean
from telemetry.services.ingest.ingest_inputs import CycleBegin
from telemetry.services.spend.spend_links import links_deferred
from telemetry.store import aggregates
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.postgres

_SI = SessionIndex.__table__  # type: ignore[attr-defined]
_SCANS = text("SELECT seq_scan FROM pg_stat_xact_user_tables WHERE relname = 'session_index'")
_REDACTOR = Redactor(b"k" * 32)


def _archived(first: int, last: int) -> list[dict[str, Any]]:
    """Index rows of sessions `s<first>`..: what an import leaves, written in bulk."""
    now = datetime.now(UTC)
    return [
        {
            "session_id": f"s{i}",
            "root_session_id": f"s{i}",
            "archive_path": f"s{i}.json",
            "content_hash": "0" * 64,
            "archived_at": now,
            "created_at": now,
            "cost_usd": 0.25,
        }
        for i in range(first, last)
    ]


def _tree(first: int, last: int) -> list[SessionRecord]:
    """A root `t<first>` and its children up to `last`."""
    return [
        session_record(
            f"t{i}",
            root_session_id=f"t{first}",
            parent_session_id=None if i == first else f"t{first}",
            depth=0 if i == first else 1,
            archive_path=f"t{i}.json",
            tokens_input=10,
            cost_usd=0.1,
        )
        for i in range(first, last)
    ]


def _cycle_batch(db: Session, first: int, last: int) -> None:
    """Archive sessions, then begin a cycle naming each, in one batch as the group commit
    writes one."""
    db.connection().execute(insert(SessionIndex), _archived(first, last))
    cycle_rows.prefetch(db, [f"c{i}" for i in range(first, last)])
    with aggregates.coalesced(db), links_deferred(db), cycle_rows.deferred(db):
        for i in range(first, last):
            begin_clean(db, CycleBegin(cycle_id=f"c{i}", driver="d", session_id=f"s{i}"), datetime.now(UTC))


def _import_batch(db: Session, first: int, last: int) -> None:
    index_batch(db, _tree(first, last), redactor=_REDACTOR)


def _archived_tree(db: Session, first: int, last: int) -> None:
    index_records(db, _tree(first, first + 4), redactor=_REDACTOR)


@pytest.mark.parametrize("write", [_cycle_batch, _import_batch, _archived_tree])
def test_a_write_after_a_burst_of_archives_searches_the_index(
    pg_url: str, write: Callable[[Session, int, int], None]
) -> None:
    migrate_by_copy(pg_url)
    engine = make_engine(pg_url)
    upgrade(engine)
    try:
        n = 0
        for _ in range(40):  # a young store: the statements are prepared meanwhile
            with session_scope(engine) as db:
                write(db, n, n + 16)
            n += 16
        with session_scope(engine) as db:  # a burst: 20,000 archives imported at once
            for k in range(100_000, 120_000, 2_000):
                db.connection().execute(insert(SessionIndex), _archived(k, k + 2_000))
        with session_scope(engine) as db:
            before = db.connection().execute(_SCANS).scalar_one()
            write(db, n, n + 16)
            assert db.connection().execute(_SCANS).scalar_one() == before
        with session_scope(engine) as db:  # and it wrote what it did before
            written = db.connection().execute(select(_SI.c.driver, _SI.c.session_id)).all()
        if write is _cycle_batch:  # each session took its cycle's driver
            assert sum(1 for d, s in written if s.startswith("s") and d == "d") == n + 16
        else:  # 16 sessions a batch, or a tree of 4 a write
            each = 16 if write is _import_batch else 4
            assert sum(1 for _, s in written if s.startswith("t")) == 41 * each
    finally:
        engine.dispose()
