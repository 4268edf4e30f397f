"""The catch-up indexer: write the content index (`search_part`) after the archive, not in it.

Writing every part's text into the trigram index in the archive's own transaction made
archiving cost about twice as much. So an index writer (one tree, a batch, an import, a repair)
only queues the session in `search_pending` (`enqueue`, one upsert per batch), and the catch-up
(`catch_up`) reads each queued session's archive document and replaces its parts, a batch of
sessions per transaction. Only redacted text is ever indexed: a document the writer says octel
wrote redacted itself (`enqueue(..., redacted=...)`, the queue's `redacted`) is read as it is;
any other (a file imported where it lay, never rewritten; a kept older archive; a repair) is
redacted again first. It runs every `search_catchup_seconds` in
`octel serve` and `octel watch` (`CatchupThread`), to the end in `octel db reindex` and before
`octel search`; with the setting at 0 each writer's caller runs it at once (`index_now`).

Safe beside writers and prunes: a queued row carries a `tick` that grows each time the session
is queued again, and the catch-up takes a row off only at the tick it read, in the transaction
that writes the parts; a session archived again meanwhile stays queued (its newer document is
read next time), one pruned meanwhile is gone from the queue and gets no parts. Two catch-ups
at once (two workers) may read the same session; only one writes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import and_, exists, or_
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import col, select

from archiver.content import ContentPart, content_parts
from archiver.redact import Redactor
from archiver.store import ArchiveStore
from telemetry.archive_store import archive_store
from telemetry.queries.content_search import pending
from telemetry.queries.turns import open_archive
from telemetry.services.index.content_index import enqueue, put_parts
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.store.search_models import SearchPart, SearchPending

__all__ = [
    "BATCH",
    "CatchupReport",
    "CatchupThread",
    "catch_up",
    "enqueue_unindexed",
    "index_now",
    "pending_count",
    "start_catchup",
]

log = logging.getLogger(__name__)

BATCH = 200  # sessions per transaction of the catch-up
_P = SearchPending.__table__  # type: ignore[attr-defined]


@dataclass
class CatchupReport:
    sessions: int = 0
    parts: int = 0
    errors: list[str] = field(default_factory=list)


def pending_count(engine: Engine) -> int:
    with session_scope(engine, write=False) as db:
        return int(pending(db)["pending_sessions"])


def enqueue_unindexed(engine: Engine) -> int:
    """Queue every archived session that has no parts and is not queued (a store from before
    the content index, or parts deleted by hand); returns how many were queued."""
    no_parts = ~exists().where(col(SearchPart.session_id) == col(SessionIndex.session_id))
    queued = exists().where(col(SearchPending.session_id) == col(SessionIndex.session_id))
    with session_scope(engine) as db:
        ids = list(db.exec(select(SessionIndex.session_id).where(no_parts, ~queued).distinct()).all())
        enqueue(db, ids)
    return len(ids)


def _read(
    store: ArchiveStore, redactor: Redactor, path: str | None, sid: str, redacted: bool, report: CatchupReport
) -> tuple[ContentPart, ...]:
    if path is None:  # the session is gone from the index: nothing to index
        return ()
    doc, why = open_archive(store, path)
    if doc is None:
        report.errors.append(f"{sid}: {why}")
        return ()
    if redacted:  # written redacted by octel: redacting it again would find nothing
        return content_parts(doc)
    red, _ = redactor.redact_obj(doc)
    return content_parts(red)


def _batch(engine: Engine, n: int) -> list[tuple[str, int, str | None, bool]]:
    """The oldest `n` queued: (session, tick, its document's path, written redacted), read
    in one statement, so the flag is the one queued with the path the index row names."""
    with session_scope(engine, write=False) as db:
        q = SearchPending
        stmt = select(q.session_id, q.tick, SessionIndex.archive_path, q.redacted)
        stmt = stmt.outerjoin(SessionIndex, col(SessionIndex.session_id) == col(q.session_id))
        stmt = stmt.order_by(col(q.queued_at), col(q.session_id)).limit(n)
        return [(str(s), int(t), p, bool(r)) for s, t, p, r in db.exec(stmt).all()]


def _write(engine: Engine, read: dict[str, tuple[int, tuple[ContentPart, ...]]]) -> tuple[int, int]:
    """Take the sessions read off the queue at the tick read and write their parts, in one
    transaction; (sessions written, parts written)."""
    with session_scope(engine) as db:
        if engine.dialect.name == "postgresql":
            # the commit need not wait for its WAL on disk: a crash that loses it loses the queue
            # rows' delete too, so the sessions are still queued and indexed again
            db.connection().exec_driver_sql("SET LOCAL synchronous_commit = off")
        # the queue's rows locked in id order first, as writers take them (`enqueue`): a
        # delete locks them in whatever order it finds them, and deadlocked against a writer
        ids = sorted(read)
        lock = select(SearchPending.session_id).where(col(SearchPending.session_id).in_(ids))
        db.exec(lock.order_by(col(SearchPending.session_id)).with_for_update()).all()
        ticks = [and_(_P.c.session_id == s, _P.c.tick == t) for s, (t, _) in sorted(read.items())]
        taken = db.connection().execute(_P.delete().where(or_(*ticks)).returning(_P.c.session_id))
        mine = {str(r[0]) for r in taken}
        written = put_parts(db, {s: read[s][1] for s in sorted(mine)}) if mine else 0
    return len(mine), written


def catch_up(
    engine: Engine,
    store: ArchiveStore,
    redactor: Redactor,
    *,
    batch: int = BATCH,
    progress: Callable[[int], None] | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> CatchupReport:
    """Index every queued session, oldest first, a batch per transaction; report what was done.
    Stops when the queue is empty, a whole batch was queued again while it was read, or
    `stopping()` says so between batches."""
    report = CatchupReport()
    while not stopping() and (rows := _batch(engine, batch)):
        read = {sid: (tick, _read(store, redactor, path, sid, red, report)) for sid, tick, path, red in rows}
        sessions, parts = _write(engine, read)
        report.sessions += sessions
        report.parts += parts
        if progress is not None:
            progress(sessions)
        if sessions == 0:
            break
    return report


def index_now(settings: Settings, engine: Engine, redactor: Redactor) -> None:
    """With `search_catchup_seconds` at 0, index what is queued now (after a writer's commit);
    otherwise leave it to the catch-up. A failure is logged: the archive itself is written."""
    if settings.search_catchup_seconds > 0:
        return
    try:
        report = catch_up(engine, archive_store(settings, engine), redactor)
    except (SQLAlchemyError, OSError) as exc:
        log.warning("octel: search index not caught up: %s", exc)
        return
    for line in report.errors:
        log.warning("octel: search index: skipped %s", line)


class CatchupThread:
    """Run `catch_up` every `interval` seconds until `close` (a thread of `octel serve` or
    `octel watch`); a store away now is tried again next time."""

    def __init__(self, engine: Engine, store: ArchiveStore, redactor: Redactor, interval: float) -> None:
        self.engine, self.store, self.redactor, self.interval = engine, store, redactor, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="octel-search-catchup", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                report = catch_up(self.engine, self.store, self.redactor, stopping=self._stop.is_set)
            except (SQLAlchemyError, OSError) as exc:
                log.warning("octel: search index not caught up: %s", exc)
                continue
            for line in report.errors:
                log.warning("octel: search index: skipped %s", line)

    def start(self) -> CatchupThread:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)


def start_catchup(settings: Settings, engine: Engine, redactor: Redactor) -> CatchupThread | None:
    """The catch-up thread of a long-running command, started; None with the setting at 0
    (each writer's caller indexes at once)."""
    every = settings.search_catchup_seconds
    return (
        CatchupThread(engine, archive_store(settings, engine), redactor, every).start() if every > 0 else None
    )
