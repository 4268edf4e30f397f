"""Build the content index for sessions archived before it existed (`octel db reindex`).

Resumable: a session whose parts are already in `search_part` is skipped, so a run that was
stopped carries on where it was, and running it again on an indexed store reads nothing but
the index. Sessions go in batches of `BATCH`, each batch one transaction; a document that cannot
be read is reported and skipped. The text is redacted again on the way in (the documents in
the store were redacted when written; a file imported where it lay was not rewritten), so
only redacted text is ever indexed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, exists, func
from sqlalchemy.engine import Engine
from sqlmodel import col, select

from archiver.content import ContentPart, content_parts
from archiver.redact import Redactor
from archiver.store import ArchiveStore
from telemetry.queries.turns import open_archive
from telemetry.services.content_index import put_parts
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.store.search_models import SearchPart

__all__ = ["BATCH", "BackfillReport", "backfill_content", "sessions_to_index"]

BATCH = 200


@dataclass
class BackfillReport:
    sessions: int = 0
    parts: int = 0
    errors: list[str] = field(default_factory=list)


def _unindexed() -> ColumnElement[bool]:
    return ~exists().where(col(SearchPart.session_id) == col(SessionIndex.session_id))


def sessions_to_index(engine: Engine) -> int:
    """How many index rows have no parts yet (what a backfill will read)."""
    with session_scope(engine, write=False) as db:
        return int(db.exec(select(func.count()).select_from(SessionIndex).where(_unindexed())).one())


def backfill_content(
    engine: Engine,
    store: ArchiveStore,
    redactor: Redactor,
    *,
    progress: Callable[[int], None] | None = None,
) -> BackfillReport:
    """Index the parts of every session that has none, oldest row first; report what was done."""
    report = BackfillReport()
    after = 0
    while True:
        with session_scope(engine, write=False) as db:
            stmt = select(SessionIndex.id, SessionIndex.session_id, SessionIndex.archive_path)
            stmt = stmt.where(col(SessionIndex.id) > after, _unindexed()).order_by(col(SessionIndex.id))
            batch = list(db.exec(stmt.limit(BATCH)).all())
        if not batch:
            return report
        after = int(batch[-1][0] or 0)
        parts: dict[str, tuple[ContentPart, ...]] = {}
        for _id, sid, path in batch:
            doc, why = open_archive(store, path)
            if doc is None:
                report.errors.append(f"{sid}: {why}")
                continue
            red, _ = redactor.redact_obj(doc)
            parts[sid] = content_parts(red)
        with session_scope(engine) as db:
            report.parts += put_parts(db, parts)
        report.sessions += len(parts)
        if progress is not None:
            progress(len(batch))
