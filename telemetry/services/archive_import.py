"""Index archive files already on disk (`octel import archives DIR`), file by file.

Each file is read within the size limit, parsed, upgraded to the newest layout and validated
(JSON Schema and bounds) before it is indexed, in a savepoint of its own: a bad file (or a
row the store refuses) is reported with its reason and skipped, and the rest is indexed.
Only regular files inside DIR are read, symlinks resolved; a file from a folder outside the
archive folder is written into it (redacted, read back) so every index row names a file
inside the archive folder, the one place readers look.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.engine import Engine

from archiver.archive import serialise, verify_written
from archiver.files import (
    archive_name,
    contained,
    content_hash,
    parse_archive,
    read_plain,
    remove_stale_parts,
    write_atomic,
)
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.validate import check_archive
from telemetry.services.indexing import IndexStats, index_records
from telemetry.settings import Settings
from telemetry.store.db import session_scope

__all__ = ["ImportReport", "archive_candidates", "import_archives"]

_BATCH = 200


@dataclass
class ImportReport:
    files: int = 0
    stats: IndexStats = field(default_factory=IndexStats)
    copied: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "new": self.stats.new,
            "updated": self.stats.updated,
            "findings_new": self.stats.findings_new,
            "copied": self.copied,
            "failed": self.skipped,
        }


def archive_candidates(folder: Path) -> list[Path]:
    """``*.json`` and ``*.json.gz`` files in ``folder`` and below (hidden names left out)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
        and (p.is_file() or p.is_symlink())
    )


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.is_relative_to(folder.resolve())
    except OSError:
        return False


def _copy_in(
    doc: dict[str, Any], archives: Path, redactor: Redactor, settings: Settings
) -> tuple[str, bytes]:
    """Write ``doc`` into the archive folder under the archiver's own name, redacted, and
    read it back; returns (name, bytes written)."""
    data, _ = serialise(doc, redactor)
    named, _ = redactor.redact_obj({"label": doc.get("label"), "agent": doc.get("agent")})
    name = archive_name(
        str(doc.get("archived_at") or "unknown-time"),
        int(doc.get("depth") or 0),
        named["label"],
        named["agent"],
        str(doc["session_id"]),
    )
    path = archives / name
    write_atomic(path, data, max_bytes=settings.archive_max_bytes)
    verify_written(path, data, settings.archive_max_bytes)
    return name, data


def _load(
    path: Path, folder: Path, settings: Settings, redactor: Redactor, report: ImportReport
) -> SessionRecord:
    """The index record of one file; ValueError or OSError says why it cannot be indexed."""
    real = contained(folder, path.relative_to(folder))
    if real is None:
        raise ValueError("not a regular file inside the folder (a symlink pointing outside it?)")
    plain = read_plain(real, settings.archive_max_bytes)
    doc = parse_archive(plain, path.name)
    check_archive(doc)
    archives = settings.archives
    if _inside(real, archives):
        rel = str(real.relative_to(archives.resolve()))
        return record_from_doc(doc, rel, content_hash(plain))
    archives.mkdir(parents=True, exist_ok=True)
    name, data = _copy_in(doc, archives, redactor, settings)
    report.copied += 1
    return record_from_doc(orjson.loads(data), name, content_hash(data))


def _index(
    engine: Engine, batch: list[tuple[Path, SessionRecord]], redactor: Redactor, report: ImportReport
) -> None:
    """Index a batch in one transaction, each file in a savepoint of its own."""
    with session_scope(engine) as db:
        for path, rec in batch:
            try:
                with db.begin_nested():
                    report.stats.add(index_records(db, [rec], redactor=redactor))
            except Exception as exc:  # the store refused this row: report it, keep the rest
                report.skipped.append(
                    {"file": str(path), "error": f"cannot index: {type(exc).__name__}: {exc}"[:300]}
                )


def import_archives(
    engine: Engine,
    folder: Path,
    settings: Settings,
    redactor: Redactor,
    progress: Callable[[int], None] = lambda _n: None,
) -> ImportReport:
    """Index every archive file in ``folder``; never stops at a bad file."""
    remove_stale_parts(settings.archives)
    files = archive_candidates(folder)
    report = ImportReport(files=len(files))
    batch: list[tuple[Path, SessionRecord]] = []
    for path in files:
        try:
            batch.append((path, _load(path, folder, settings, redactor, report)))
        except Exception as exc:  # whatever is wrong with one file, the others are indexed
            report.skipped.append({"file": str(path), "error": f"{type(exc).__name__}: {exc}"[:300]})
        if len(batch) >= _BATCH:
            _index(engine, batch, redactor, report)
            batch = []
        progress(1)
    if batch:
        _index(engine, batch, redactor, report)
    return report
