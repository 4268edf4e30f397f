"""Where archive documents live: one small interface, a folder (here) or the database
(``telemetry.store.archive_docs``).

Every reader and writer of archive documents goes through an ``ArchiveStore``: a caller
names a document by its index row's ``archive_path`` and never opens a path itself. Both
stores keep the same names (``archiver.files.archive_name``), the same bytes (redacted,
validated JSON), the same size limit and the same failures: ``ArchiveMissing`` when a
document is not there, ``ArchiveTooLarge`` past the limit, ``ValueError`` when it is damaged.

Writes: ``put`` takes the redacted JSON of one session. The folder store writes it at once
(temporary file, fsync, rename, read back and validated). The database store validates it and
holds it until ``flush(db)`` writes it inside the caller's index transaction, so the document
and its index row commit together; ``confirm()`` then reads back what was committed. A caller
writes with ``put`` …, then, in one transaction, ``flush`` and ``index_records``, then
``confirm`` before it deletes anything on a server. Several ``put`` calls may share one
``flush`` (a batch).
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from archiver.errors import ArchiveWriteError
from archiver.files import (
    DEFAULT_MAX_BYTES,
    find_archives,
    parse_archive,
    read_plain,
    remove_stale_parts,
    sync_folder,
    write_atomic,
)
from archiver.validate import check_archive

__all__ = ["ArchiveMissing", "ArchiveStore", "FolderStore", "Stored", "as_store", "locate"]


class ArchiveMissing(FileNotFoundError):
    """No document of that name in the store (pruned, moved, or never written)."""


@dataclass(frozen=True)
class Stored:
    """What a store knows of one document without reading it."""

    name: str
    size: int  # bytes as stored (compressed where the store compresses)
    version: Hashable  # changes whenever the document is rewritten (a cache key)


class ArchiveStore(Protocol):
    kind: str  # "files" or "database"
    max_bytes: int

    def where(self, name: str) -> str:
        """Where a document is, for people: a path, or ``database:<name>``."""
        ...

    def stat(self, name: str) -> Stored | None:
        """The document's size and version, or None when it is not there (or, for the
        folder, a name that leaves the folder)."""
        ...

    def read(self, name: str) -> bytes:
        """The document's JSON bytes, at most ``max_bytes`` of them."""
        ...

    def names(self, session_id: str | None = None) -> list[str]:
        """Names of the documents held (of one session when given), sorted."""
        ...

    def put(self, name: str, session_id: str, data: bytes, *, compress: bool = False) -> None:
        """Store the JSON bytes of one session's document (``ArchiveWriteError`` if it
        cannot be; ``ValueError`` when it fails its read-back or validation)."""
        ...

    def flush(self, transaction: Any, names: Iterable[str] | None = None) -> None:
        """Write what ``put`` holds (of ``names`` when given) into the caller's open
        transaction (the database store); the folder store wrote at ``put``."""
        ...

    def confirm(self, names: Iterable[str] | None = None) -> list[str]:
        """Read back what ``flush`` wrote (of ``names`` when given) once it is committed; one
        sentence per document that does not match. The folder store read back at ``put``."""
        ...

    def remove(self, names: Iterable[str]) -> list[str]:
        """Remove documents (a missing one is no error); one sentence per failure."""
        ...


def locate(folder: Path, name: str) -> Path | None:
    """Where an index row's ``archive_path`` lies in ``folder``, or None when it leaves it.

    The one containment rule every reader of the folder follows: the path is resolved
    (symlinks followed) under the resolved folder and must stay inside it, absolute or not
    (`octel import archives` copies files from other folders into the archive folder, so no
    row needs more)."""
    try:
        base = folder.resolve()
        target = (base / name).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, an unreadable folder, a NUL
        return None
    return target if target.is_relative_to(base) and target != base else None


def _read_doc_checked(plain: bytes, name: str) -> None:
    check_archive(parse_archive(plain, name))


class FolderStore:
    """Archive files in one folder, written atomically; every name from the index is resolved
    (symlinks followed) and has to stay inside the folder."""

    kind = "files"

    def __init__(self, folder: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._written = False

    def where(self, name: str) -> str:
        return str(self.folder / name)

    def path(self, name: str) -> Path | None:
        """The regular file a name stands for inside the folder, or None."""
        p = locate(self.folder, name)
        return p if p is not None and p.is_file() else None

    def stat(self, name: str) -> Stored | None:
        p = self.path(name)
        if p is None:
            return None
        try:
            st = p.stat()
        except OSError:
            return None
        return Stored(name, st.st_size, (str(p), st.st_size, st.st_mtime_ns))

    def read(self, name: str) -> bytes:
        p = locate(self.folder, name)
        if p is None:
            raise ArchiveMissing(f"archive file {name} is outside the archive folder")
        if not p.is_file():
            raise ArchiveMissing(f"archive file {name} is not there (pruned or moved?)")
        return read_plain(p, self.max_bytes)

    def names(self, session_id: str | None = None) -> list[str]:
        return [p.name for p in find_archives(self.folder, session_id)]

    def put(self, name: str, session_id: str, data: bytes, *, compress: bool = False) -> None:
        path = self.folder / name
        write_atomic(path, data, compress=compress, sync_dir=False, max_bytes=self.max_bytes)
        self._written = True
        plain = read_plain(path, self.max_bytes)
        if plain != data:
            raise ValueError("the file read back differs from what was written")
        _read_doc_checked(plain, name)

    def sync(self) -> None:
        """Make the renames of the files put since the last sync durable (one folder fsync
        for a batch)."""
        if self._written:
            self._written = False
            try:
                sync_folder(self.folder)
            except OSError as exc:
                raise ArchiveWriteError(str(self.folder), exc.strerror or str(exc)) from exc

    def flush(self, transaction: Any, names: Iterable[str] | None = None) -> None:
        return None

    def confirm(self, names: Iterable[str] | None = None) -> list[str]:
        return []

    def remove(self, names: Iterable[str]) -> list[str]:
        errors: list[str] = []
        for name in names:
            p = self.path(name)
            if p is None:
                continue
            try:
                p.unlink(missing_ok=True)
            except OSError as e:
                errors.append(f"{p}: {e.strerror or e}")
        return errors

    def remove_stale(self) -> int:
        """Remove the temporary files of writers that died; how many."""
        with contextlib.suppress(OSError):
            if self.folder.is_dir():
                return len(remove_stale_parts(self.folder))
        return 0


def as_store(where: ArchiveStore | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> ArchiveStore:
    """A store for a folder given as a path (older callers pass the folder itself)."""
    return FolderStore(where, max_bytes) if isinstance(where, Path) else where
