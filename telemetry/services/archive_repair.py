"""Index rows against the archive folder: find rows whose file is gone (or not inside the
folder), and repair them (`octel doctor --repair`).

A row whose file is missing is pointed at another valid archive file of the same session
when the folder holds one (the newest), and removed otherwise, with its findings; counters
are left as they are (they never go down). Temporary files of dead writers are removed too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import col, delete, select

from archiver.files import (
    archive_files_of,
    contained,
    content_hash,
    find_archives,
    parse_archive,
    read_plain,
    remove_stale_parts,
)
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.validate import check_archive
from telemetry.services.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import Finding, SessionIndex

__all__ = ["IndexHealth", "check_index", "repair_index"]


@dataclass
class IndexHealth:
    rows: int = 0
    missing: list[tuple[str, str]] = field(default_factory=list)  # (session id, archive path)
    stale_parts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "missing": [{"session_id": s, "archive_path": p} for s, p in self.missing],
            "stale_parts": self.stale_parts,
        }


def check_index(engine: Engine, settings: Settings) -> IndexHealth:
    """Rows whose archive file is not a regular file inside the archive folder."""
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(SessionIndex.session_id, SessionIndex.archive_path)))
    health = IndexHealth(rows=len(rows))
    health.missing = [(sid, path) for sid, path in rows if contained(settings.archives, path) is None]
    if settings.archives.is_dir():
        health.stale_parts = sum(1 for _ in settings.archives.glob(".tmp-*.part"))
    return health


def _newest_valid(settings: Settings, listing: list[Any], session_id: str) -> SessionRecord | None:
    for path in reversed(archive_files_of(listing, session_id)):
        real = contained(settings.archives, path.name)
        if real is None:
            continue
        try:
            plain = read_plain(real, settings.archive_max_bytes)
            doc = parse_archive(plain, path.name)
            check_archive(doc)
        except (OSError, ValueError):
            continue
        return record_from_doc(doc, path.name, content_hash(plain))
    return None


def repair_index(engine: Engine, settings: Settings, redactor: Redactor) -> dict[str, Any]:
    """Point each row with a missing file at the session's newest valid file, or remove it;
    remove the temporary files of dead writers. Returns what was done."""
    parts = remove_stale_parts(settings.archives) if settings.archives.is_dir() else []
    health = check_index(engine, settings)
    listing = find_archives(settings.archives)
    repointed: list[str] = []
    removed: list[str] = []
    for sid, _path in health.missing:
        record = _newest_valid(settings, listing, sid)
        with session_scope(engine) as db:
            if record is not None:
                index_records(db, [record], redactor=redactor)
                repointed.append(sid)
            else:
                db.exec(delete(Finding).where(col(Finding.session_id) == sid))
                db.exec(delete(SessionIndex).where(col(SessionIndex.session_id) == sid))
                removed.append(sid)
    return {"repointed": repointed, "removed": removed, "stale_parts_removed": len(parts)}
