"""Load archive files already on disk into the configured archive store and index them
(`octel import archives DIR`), file by file; exports, run logs and event captures among them
are archived first (`telemetry.services.index.session_import`).

Each file is read within the size limit, parsed, upgraded to the newest layout and validated
(JSON Schema and bounds) before it is indexed, in a savepoint of its own: a bad file (or a
row the store refuses) is reported with its reason and skipped, and the rest is indexed.
Only regular files inside DIR are read, symlinks resolved. A file already inside the archive
folder (the folder store) is indexed where it is; any other is put into the store (a file
from another folder is copied into the archive folder; with the database store every file
becomes a row, written in its index row's savepoint), redacted and read back, so every index
row names a document of the store, the one place readers look. A document in the newest
layout that redaction leaves alone is stored byte for byte, so files → database → files gives
back the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import orjson
from sqlalchemy.engine import Engine

from archiver.archive import serialise
from archiver.cut import cut
from archiver.files import contained, content_hash, document_name, parse_archive, read_plain
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.shape import RawJson
from archiver.store import ArchiveStore, FolderStore
from archiver.validate import check_archive
from telemetry.archive_store import archive_store
from telemetry.otel_export.background import background_for
from telemetry.services.index.indexing import IndexStats, index_records
from telemetry.services.index.search_catchup import index_now
from telemetry.services.index.session_import import Exports, docs_of_trees, file_stamp, read_session_file
from telemetry.settings import Settings
from telemetry.store.db import session_scope

__all__ = ["ImportReport", "archive_candidates", "import_archives"]

_BATCH = 200


class ImportDoc(TypedDict):
    files: int
    new: int
    updated: int
    findings_new: int
    copied: int
    failed: list[dict[str, str]]


@dataclass
class ImportReport:
    files: int = 0
    stats: IndexStats = field(default_factory=IndexStats)
    copied: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    roots: dict[str, None] = field(default_factory=dict)  # trees indexed, for trace export
    exports: Exports = field(default_factory=Exports)  # read, linked into trees at the end

    def to_dict(self) -> ImportDoc:
        return {
            "files": self.files,
            "new": self.stats.new,
            "updated": self.stats.updated,
            "findings_new": self.stats.findings_new,
            "copied": self.copied,
            "failed": self.skipped,
        }


_SUFFIXES = tuple(f"{ext}{gz}" for ext in (".json", ".jsonl", ".ndjson") for gz in ("", ".gz"))


def archive_candidates(folder: Path) -> list[Path]:
    """``*.json``, ``*.jsonl`` and ``*.ndjson`` files (gzipped or not) in ``folder`` and below
    (hidden names left out)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(folder).parts)
        and p.name.endswith(_SUFFIXES)
        and (p.is_file() or p.is_symlink())
    )


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.is_relative_to(folder.resolve())
    except OSError:
        return False


def _copy_in(
    doc: RawJson, plain: bytes, store: ArchiveStore, redactor: Redactor, *, gz: bool
) -> tuple[str, bytes]:
    """Put ``doc`` into the store under the archiver's own name, redacted (its own bytes when
    it is in the newest layout and holds nothing to redact); returns (name, bytes put). A
    gzipped file keeps its ``.json.gz`` name (and the folder store gzips it again), so an
    export of the store gives back the same files."""
    data = plain if orjson.loads(plain) == doc and redactor.redact_json(plain) == plain else b""
    if not data:
        data, _ = serialise(doc, redactor)
    name, sid = document_name(doc, redactor, compress=gz)
    # the folder reads it back; the database validates (and compresses its own way)
    store.put(name, sid, data, compress=gz)
    return name, data


def _put_new(doc: RawJson, store: ArchiveStore, redactor: Redactor, report: ImportReport) -> SessionRecord:
    """Store a document built here (from an export, a log or a capture) and its record."""
    data, _ = serialise(doc, redactor)
    check_archive(orjson.loads(data))
    name, sid = document_name(doc, redactor)
    store.put(name, sid, data)
    report.copied += 1
    return record_from_doc(orjson.loads(data), name, content_hash(data))


def _load(
    path: Path,
    folder: Path,
    settings: Settings,
    redactor: Redactor,
    report: ImportReport,
    store: ArchiveStore,
) -> list[SessionRecord]:
    """The index records of one file (an export gives none yet: `Exports`); ValueError or
    OSError says why it cannot be indexed."""
    real = contained(folder, path.relative_to(folder))
    if real is None:
        raise ValueError("not a regular file inside the folder (a symlink pointing outside it?)")
    plain = read_plain(real, settings.archive_max_bytes)
    trees = read_session_file(plain, path, report.exports)
    if trees is not None:  # an export, a run log or an event capture
        return [_put_new(d, store, redactor, report) for d in docs_of_trees(trees, file_stamp(real), path)]
    return [_load_archive(plain, real, path, redactor, report, store)]


def _load_archive(
    plain: bytes, real: Path, path: Path, redactor: Redactor, report: ImportReport, store: ArchiveStore
) -> SessionRecord:
    doc = parse_archive(plain, path.name)
    check_archive(doc)
    if isinstance(store, FolderStore) and _inside(real, store.folder):
        rel = str(real.relative_to(store.folder.resolve()))
        # a file already in the folder is indexed where it lies, unrewritten: the search
        # catch-up redacts its text again before indexing it, as its record's text is here
        return record_from_doc(doc, rel, content_hash(plain))
    name, data = _copy_in(doc, plain, store, redactor, gz=path.name.endswith(".gz"))
    report.copied += 1
    return record_from_doc(orjson.loads(data), name, content_hash(data))


def _index(
    engine: Engine,
    batch: list[tuple[Path, SessionRecord]],
    redactor: Redactor,
    report: ImportReport,
    store: ArchiveStore,
) -> None:
    """Index a batch in one transaction, each file (its document and its row) in a savepoint
    of its own; then read back what the database store wrote."""
    done: dict[str, Path] = {}
    with session_scope(engine) as db:
        for path, rec in batch:
            try:
                with db.begin_nested():
                    store.flush(db, [rec.archive_path])
                    report.stats.add(index_records(db, [rec], redactor=redactor))
                report.roots.setdefault(rec.root_session_id)
                done[rec.archive_path] = path
            except Exception as exc:  # the store refused this row: report it, keep the rest
                report.skipped.append(
                    {"file": str(path), "error": cut(f"cannot index: {type(exc).__name__}: {exc}", 300)}
                )
    for problem in store.confirm(done):
        report.skipped.append({"file": "", "error": cut(problem, 300)})


def _exports(
    report: ImportReport, store: ArchiveStore, redactor: Redactor
) -> list[tuple[Path, SessionRecord]]:
    """The exports of the folder, linked into trees, each session stored as its own document."""
    files = report.exports.files
    out = []
    for tree in report.exports.trees():
        paths = {s.session_id: files[s.session_id][0] for s in tree.sessions}
        stamp = files[tree.sessions[0].session_id][1]
        try:
            docs = docs_of_trees([tree], stamp, paths)
        except Exception as exc:  # one tree that cannot be built: its files are reported
            for p in paths.values():
                report.skipped.append({"file": str(p), "error": cut(f"{type(exc).__name__}: {exc}", 300)})
            continue
        for doc in docs:
            try:
                out.append((paths[doc["session_id"]], _put_new(doc, store, redactor, report)))
            except Exception as exc:
                err = cut(f"{type(exc).__name__}: {exc}", 300)
                report.skipped.append({"file": str(paths[doc["session_id"]]), "error": err})
    return out


def import_archives(
    engine: Engine,
    folder: Path,
    settings: Settings,
    redactor: Redactor,
    progress: Callable[[int], None] = lambda _n: None,
) -> ImportReport:
    """Load every archive file in ``folder`` into the store and index it; never stops at a
    bad file."""
    store = archive_store(settings, engine)
    if isinstance(store, FolderStore):
        store.remove_stale()
    files = archive_candidates(folder)
    report = ImportReport(files=len(files))
    batch: list[tuple[Path, SessionRecord]] = []
    for path in files:
        try:
            batch += [(path, r) for r in _load(path, folder, settings, redactor, report, store)]
        except Exception as exc:  # whatever is wrong with one file, the others are indexed
            report.skipped.append({"file": str(path), "error": cut(f"{type(exc).__name__}: {exc}", 300)})
        if len(batch) >= _BATCH:
            _index(engine, batch, redactor, report, store)
            batch = []
        progress(1)
    batch += _exports(report, store, redactor)
    if batch:
        _index(engine, batch, redactor, report, store)
    index_now(settings, engine, redactor)  # the search index, when not caught up later
    bg = background_for(settings)  # trace export, when configured: queued, never waited for
    if bg is not None:
        for root in report.roots:
            bg.submit(root)
    return report
