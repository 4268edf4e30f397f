"""Index rows against the archive store: find rows whose document is gone (or, in the folder,
not inside it), and repair them (`octel doctor --repair`).

A row whose document is missing is pointed at another valid archive document of the same
session when the store holds one (the newest), and removed otherwise, with its findings;
counters are left as they are (they never go down). Temporary files of dead writers are
removed too. With the database store the check is one query (rows without a document).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import col, delete, func, select

from archiver.files import content_hash, parse_archive
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.store import ArchiveStore, FolderStore
from archiver.validate import check_archive
from telemetry.archive_store import archive_store
from telemetry.services.index.indexing import index_records
from telemetry.services.index.search_catchup import index_now
from telemetry.services.spend.spend_links import remove_sessions
from telemetry.settings import Settings
from telemetry.store.archive_docs import ArchiveDocument, DatabaseStore
from telemetry.store.db import session_scope
from telemetry.store.models import Finding, SessionIndex

__all__ = ["IndexHealth", "RepairDoc", "check_index", "repair_index"]


class MissingDoc(TypedDict):
    session_id: str
    archive_path: str


class IndexHealthDoc(TypedDict):
    rows: int
    missing: list[MissingDoc]
    stale_parts: int
    in_folder: int


@dataclass
class IndexHealth:
    rows: int = 0
    missing: list[tuple[str, str]] = field(default_factory=list)  # (session id, archive path)
    stale_parts: int = 0
    in_folder: int = 0  # database store: rows whose document is still a file of the folder

    def to_dict(self) -> IndexHealthDoc:
        return {
            "rows": self.rows,
            "missing": [{"session_id": s, "archive_path": p} for s, p in self.missing],
            "stale_parts": self.stale_parts,
            "in_folder": self.in_folder,
        }


def check_index(engine: Engine, settings: Settings) -> IndexHealth:
    """Rows whose archive document is not in the store (in the folder: not a regular file
    inside it)."""
    store = archive_store(settings, engine)
    rows_q = select(SessionIndex.session_id, SessionIndex.archive_path)
    with session_scope(engine, write=False) as db:
        if isinstance(store, FolderStore):
            rows = list(db.exec(rows_q))
            health = IndexHealth(rows=len(rows))
            health.missing = [(sid, path) for sid, path in rows if store.stat(path) is None]
        else:
            health = IndexHealth(rows=db.exec(select(func.count()).select_from(SessionIndex)).one())
            stored = select(ArchiveDocument.name).where(ArchiveDocument.name == SessionIndex.archive_path)
            absent = list(db.exec(rows_q.where(~stored.exists())))
            old = store.fallback if isinstance(store, DatabaseStore) else None
            # a row whose file is still in the folder of before is read from there, not missing
            health.in_folder = sum(1 for _, p in absent if old is not None and old.stat(p) is not None)
            health.missing = [(s, p) for s, p in absent if old is None or old.stat(p) is None]
    if isinstance(store, FolderStore) and store.folder.is_dir():
        health.stale_parts = sum(1 for _ in store.folder.glob(".tmp-*.part"))
    return health


def _newest_valid(store: ArchiveStore, session_id: str) -> SessionRecord | None:
    for name in reversed(store.names(session_id)):
        try:
            plain = store.read(name)
            doc = parse_archive(plain, name)
            check_archive(doc)
        except (OSError, ValueError):
            continue
        return record_from_doc(doc, name, content_hash(plain))
    return None


class RepairDoc(TypedDict):
    """What `repair_index` did: the sessions whose row now names another document, those whose
    row went, and how many temporary files of dead writers it removed."""

    repointed: list[str]
    removed: list[str]
    stale_parts_removed: int


def repair_index(engine: Engine, settings: Settings, redactor: Redactor) -> RepairDoc:
    """Point each row with a missing document at the session's newest valid one, or remove
    it; remove the temporary files of dead writers. Returns what was done."""
    store = archive_store(settings, engine)
    parts = store.remove_stale() if isinstance(store, FolderStore) else 0
    health = check_index(engine, settings)
    repointed: list[str] = []
    removed: list[str] = []
    for sid, _path in health.missing:
        record = _newest_valid(store, sid)
        with session_scope(engine) as db:
            if record is not None:
                index_records(db, [record], redactor=redactor)
                repointed.append(sid)
            else:
                db.exec(delete(Finding).where(col(Finding.session_id) == sid))
                remove_sessions(db, [sid])
                removed.append(sid)
    index_now(settings, engine, redactor)
    return {"repointed": repointed, "removed": removed, "stale_parts_removed": parts}
