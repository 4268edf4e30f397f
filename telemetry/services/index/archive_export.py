"""Write the archive documents of the configured store out as files (`octel archives export
DIR`): the folder store's names and bytes, so `octel import archives DIR` loads them into any
store and a team moves between the folder and the database either way.

Which documents: every index row's (the index names every document a reader may open), or
those archived since a time, or the whole trees of given sessions. Each document is read
within the size limit, and parsed and validated (JSON Schema and bounds) before it is written;
a document that cannot be read is reported with its session and skipped, and the rest are
written. A file is written as the folder store writes one: a temporary file in the same folder
(mode 0600), fsync, rename, the folder fsynced (once per folder), then read back; a name
ending in ``.gz`` is gzipped as the folder store gzips. Folders made here are 0700.

Running it again changes nothing: a file that already holds the document (compared
uncompressed) is left as it is; a file that holds something else is reported and kept, unless
``force``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlmodel import col, func, select

from archiver.cut import cut
from archiver.errors import ArchiveWriteError
from archiver.files import parse_archive, read_plain, remove_stale_parts, sync_folder, write_atomic
from archiver.store import ArchiveStore, locate
from archiver.validate import check_archive
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

__all__ = ["ExportProblem", "ExportReport", "count_documents", "export_archives", "trees_of"]

_PAGE = 1000


class ExportProblem(BaseModel):
    session_id: str
    file: str  # the document's name: its path under the folder
    error: str


class ExportReport(BaseModel):
    """What an export did: each document is written, unchanged, replaced (``force``),
    differing (a file holding something else, kept) or failed."""

    folder: str
    documents: int
    written: int
    unchanged: int
    replaced: int
    differing: list[ExportProblem]
    failed: list[ExportProblem]


@dataclass
class _Tally:
    written: int = 0
    unchanged: int = 0
    replaced: int = 0
    differing: list[ExportProblem] = field(default_factory=list)
    failed: list[ExportProblem] = field(default_factory=list)
    folders: set[Path] = field(default_factory=set)


def trees_of(engine: Engine, session_ids: Sequence[str]) -> tuple[list[str], list[str]]:
    """(root session ids of the given sessions, ids the store does not know): a subagent
    stands for its whole tree."""
    with session_scope(engine, write=False) as db:
        q = select(SessionIndex.session_id, SessionIndex.root_session_id)
        found = dict(db.exec(q.where(col(SessionIndex.session_id).in_(list(session_ids)))).all())
    roots = list(dict.fromkeys(found[s] for s in session_ids if s in found))
    return roots, [s for s in session_ids if s not in found]


def _filtered(q: Any, since: datetime | None, roots: Sequence[str] | None) -> Any:
    if since is not None:
        q = q.where(SessionIndex.archived_at >= since)
    if roots is not None:
        q = q.where(col(SessionIndex.root_session_id).in_(list(roots)))
    return q


def count_documents(
    engine: Engine, *, since: datetime | None = None, roots: Sequence[str] | None = None
) -> int:
    """How many documents an export with these filters writes."""
    with session_scope(engine, write=False) as db:
        q = _filtered(select(func.count()).select_from(SessionIndex), since, roots)
        return int(db.exec(q).one())


def _rows(engine: Engine, since: datetime | None, roots: Sequence[str] | None) -> Iterator[tuple[str, str]]:
    """(session id, document name) of each document to export, page by page in id order (no
    transaction stays open while files are written)."""
    last = 0
    while True:
        q = select(SessionIndex.id, SessionIndex.session_id, SessionIndex.archive_path)
        q = _filtered(q.where(col(SessionIndex.id) > last), since, roots)
        with session_scope(engine, write=False) as db:
            page = db.exec(q.order_by(col(SessionIndex.id)).limit(_PAGE)).all()
        for row_id, sid, name in page:
            last = row_id
            yield sid, name
        if len(page) < _PAGE:
            return


def _target(folder: Path, name: str) -> Path:
    """Where the document ``name`` goes under ``folder``; ValueError for a name that would
    leave it or that an import would pass over (hidden)."""
    parts = PurePosixPath(name).parts
    if (
        not parts
        or PurePosixPath(name).is_absolute()
        or any(p in ("..", ".") or p.startswith(".") for p in parts)
    ):
        raise ValueError(f"the name {name!r} cannot be a file under the folder")
    if locate(folder, name) is None:  # a folder under it that is a link leading out
        raise ValueError(f"the name {name!r} leads out of the folder")
    target = folder.joinpath(*parts)
    for sub in reversed(target.parents):  # the document's own folders, 0700
        if sub.is_relative_to(folder) and sub != folder and not sub.exists():
            sub.mkdir(mode=0o700)
            sub.chmod(0o700)  # whatever the umask
    return target


def _problem(sid: str, name: str, exc: Exception) -> ExportProblem:
    return ExportProblem(session_id=sid, file=name, error=cut(f"{type(exc).__name__}: {exc}", 300))


def _holds(target: Path, plain: bytes, max_bytes: int) -> bool:
    """Does the file at ``target`` hold these JSON bytes (gzipped or not)?"""
    try:
        return target.is_file() and read_plain(target, max_bytes) == plain
    except (OSError, ValueError):
        return False  # unreadable or damaged: it differs


def _one(store: ArchiveStore, folder: Path, sid: str, name: str, force: bool, tally: _Tally) -> None:
    try:
        plain = store.read(name)
        target = _target(folder, name)
        existed = target.exists() or target.is_symlink()
        if existed and _holds(target, plain, store.max_bytes):
            tally.unchanged += 1  # nothing is written, so there is nothing to validate
            return
        check_archive(parse_archive(plain, name))
    except Exception as exc:  # whatever is wrong with one document, the others are written
        tally.failed.append(_problem(sid, name, exc))
        return
    if existed and not force:
        why = "the file holds something else (kept; --force replaces it)"
        tally.differing.append(ExportProblem(session_id=sid, file=name, error=why))
        return
    try:
        write_atomic(target, plain, compress=name.endswith(".gz"), sync_dir=False, max_bytes=store.max_bytes)
        if read_plain(target, store.max_bytes) != plain:
            raise ValueError("the file read back differs from the document")
    except (ArchiveWriteError, OSError, ValueError) as exc:
        tally.failed.append(_problem(sid, name, exc))
        return
    tally.folders.add(target.parent)
    if existed:
        tally.replaced += 1
    else:
        tally.written += 1


def export_archives(
    engine: Engine,
    store: ArchiveStore,
    folder: Path,
    *,
    since: datetime | None = None,
    roots: Sequence[str] | None = None,
    force: bool = False,
    progress: Callable[[], None] = lambda: None,
) -> ExportReport:
    """Write the documents of ``store`` (all, those archived ``since``, or the trees of
    ``roots``) as files under ``folder``; never stops at one bad document. OSError when the
    folder cannot be made."""
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True)
        folder.chmod(0o700)
    remove_stale_parts(folder)  # the temporary files of an export that was killed
    tally = _Tally()
    documents = 0
    for sid, name in _rows(engine, since, roots):
        documents += 1
        _one(store, folder, sid, name, force, tally)
        progress()
    for sub in sorted(tally.folders):
        try:
            sync_folder(sub)
        except OSError as exc:  # the renames may not survive a crash: say so
            tally.failed.append(ExportProblem(session_id="", file=str(sub), error=f"fsync: {exc}"))
    return ExportReport(
        folder=str(folder),
        documents=documents,
        written=tally.written,
        unchanged=tally.unchanged,
        replaced=tally.replaced,
        differing=tally.differing,
        failed=tally.failed,
    )
