"""Write many archive documents at once: the bulk path of an import.

``prepare`` is the CPU part (serialise, redact, name: pure, so it can run in a worker process);
``write_batch`` the I/O part. Each file still goes through the steps of ``write_atomic``
(a locked temporary file in the archive folder, fsync, ``os.replace``, then the folder
fsynced), but the fsyncs of a whole batch run side by side in threads, so the file system
commits them together instead of one journal commit per file, and the folder is fsynced once.
Nothing in a batch counts as written before that folder fsync and its read-back: each file
is read back and compared byte for byte with the document that was validated (and its index
record taken from) when it was prepared, which is the redacted one: its bytes parsed again when
the redactor replaced something in them; when it replaced nothing, the bytes are the document's
own serialisation and the document is checked as it is (one parse fewer per document). Validation is a
function of the bytes, so validating them where they were made (a worker process, side by side
with the others) and comparing them on the way back checks what is on disk; a document that
fails is never written.

No folder is listed here: a caller that replaces older files of the same sessions finds them
through its index (one row per session names its file) and removes them after its commit.
"""

from __future__ import annotations

import contextlib
import gzip
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from archiver.archive import ArchiveResult, serialise_held
from archiver.claude.resume import ResumeState
from archiver.errors import ArchiveWriteError
from archiver.files import (
    DEFAULT_MAX_BYTES,
    _locked_temp,
    content_hash,
    document_name,
    parse_archive,
    read_plain,
    sync_folder,
)
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.store import FolderStore
from archiver.validate import check_archive
from archiver.versions import upgrade

__all__ = ["Prepared", "prepare", "sync_threads", "write_batch"]

# fsyncs in flight at once: enough for the file system to commit many files in one go
_SYNC_THREADS = 16
# files open at once (each stays open and locked until it is renamed): well under any fd limit
_OPEN = 128


@dataclass
class Prepared:
    """One tree's documents, serialised and redacted, with the result they will report into."""

    result: ArchiveResult
    # (file name, redacted JSON bytes) per document, root first
    files: list[tuple[str, bytes]] = field(default_factory=list)
    # file name -> the index record of its bytes, parsed and validated when they were made
    checked: dict[str, SessionRecord] = field(default_factory=dict)
    # what the reader keeps to read only what its sources gain next time (no text)
    resume: ResumeState | None = None


def _checked(name: str, data: bytes, held: dict[str, Any] | None = None) -> SessionRecord:
    """The index record of one serialised document once it parses and is valid; raises
    ``ValueError`` saying what is wrong. ``held``: the document ``data`` is the serialisation
    of, as it is (``archive.serialise_held``), checked without parsing the bytes again."""
    doc = upgrade(held) if held is not None else parse_archive(data, name)
    check_archive(doc)
    return record_from_doc(doc, name, content_hash(data))


def prepare(
    docs: Sequence[Mapping[str, Any]],
    redactor: Redactor,
    result: ArchiveResult,
    *,
    compress: bool = False,
    before: Mapping[str, Mapping[str, int]] | None = None,
) -> Prepared:
    """Serialise and redact each document of one tree and name its file (no I/O). ``before``:
    by session id, the redaction counts of text in it that an earlier archive redacted."""
    out = Prepared(result)
    total: Counter[str] = Counter()
    for doc in docs:
        data, counts, held = serialise_held(doc, redactor, (before or {}).get(str(doc["session_id"])))
        total.update(counts)
        name, _ = document_name(doc, redactor, compress=compress)
        try:
            out.checked[name] = _checked(name, data, held)
        except ValueError as exc:  # never written: the tree reports it
            result.write_errors.append(f"archive {name} failed its check: {exc}")
            continue
        out.files.append((name, data))
    result.redaction = dict(sorted(total.items()))
    return out


def sync_threads(files: int = _SYNC_THREADS) -> ThreadPoolExecutor:
    """Threads for the fsyncs of ``files`` files at once (at most ``_SYNC_THREADS``)."""
    return ThreadPoolExecutor(max(1, min(_SYNC_THREADS, files)), thread_name_prefix="octel-fsync")


@dataclass
class _Pending:
    owner: ArchiveResult
    path: Path
    data: bytes
    record: SessionRecord | None = None
    fd: int = -1
    tmp: str = ""
    synced: bool = False
    error: str | None = None


def _start(p: _Pending, compress: bool, max_bytes: int) -> None:
    """Write ``p``'s bytes to a locked temporary file beside its target (not yet synced)."""
    if len(p.data) > max_bytes:
        p.error = str(
            ArchiveWriteError(str(p.path), f"{len(p.data)} bytes, more than the limit of {max_bytes}")
        )
        return
    try:
        p.fd, p.tmp = _locked_temp(p.path.parent)
        body = gzip.compress(p.data, compresslevel=6, mtime=0) if compress else p.data
        view = memoryview(body)
        while view:
            view = view[os.write(p.fd, view) :]
    except OSError as exc:
        p.error = str(ArchiveWriteError(str(p.path), exc.strerror or str(exc)))


def _sync(p: _Pending) -> None:
    if p.error is None:
        try:
            os.fsync(p.fd)
            p.synced = True
        except OSError as exc:
            p.error = str(ArchiveWriteError(str(p.path), exc.strerror or str(exc)))


def _finish(p: _Pending) -> None:
    """Rename the synced file into place (while still locked), or drop it."""
    try:
        if p.error is None and not p.synced:  # the batch was interrupted before its fsync
            p.error = str(ArchiveWriteError(str(p.path), "interrupted before it was synced"))
        if p.error is None:
            os.replace(p.tmp, p.path)
    except OSError as exc:
        p.error = str(ArchiveWriteError(str(p.path), exc.strerror or str(exc)))
    finally:
        if p.error is not None and p.tmp:
            with contextlib.suppress(OSError):
                os.unlink(p.tmp)
        if p.fd >= 0:
            os.close(p.fd)
            p.fd = -1


def _read_back(p: _Pending, max_bytes: int) -> None:
    """Read the file back and compare it with the checked bytes; record what the index gets."""
    try:
        plain = read_plain(p.path, max_bytes)
        if plain != p.data:
            raise ValueError("the file read back differs from what was written")
        record = p.record if p.record is not None else _checked(p.path.name, plain)
    except (OSError, ValueError) as exc:
        p.owner.write_errors.append(f"archive {p.path} failed its read-back: {exc}")
        return
    p.owner.written.append(p.path.name)
    p.owner.records.append(record)


def write_batch(
    batch: Sequence[Prepared],
    archive_dir: Path,
    *,
    compress: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    sync_dir: bool = True,
    syncs: ThreadPoolExecutor | None = None,
) -> None:
    """Write every prepared file of ``batch`` into ``archive_dir``; each tree's result gets its
    files, its index records and its errors. Never raises for one file's failure. A caller
    that writes many batches into one folder may pass ``sync_dir=False`` and sync the folder
    once (``sync_folder``) before anything written counts, and ``syncs``, threads kept for
    the fsyncs of every batch (``sync_threads``), instead of threads started for this one."""
    for b in batch:  # the results name their files in this folder
        if b.result.store is None:
            b.result.store = FolderStore(archive_dir, max_bytes)
    pending = [
        _Pending(b.result, archive_dir / name, data, b.checked.get(name))
        for b in batch
        for name, data in b.files
    ]
    if not pending:
        return
    try:
        archive_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        for p in pending:
            p.owner.write_errors.append(str(ArchiveWriteError(str(p.path), exc.strerror or str(exc))))
        return
    with contextlib.nullcontext(syncs) if syncs is not None else sync_threads(len(pending)) as pool:
        for i in range(0, len(pending), _OPEN):
            part = pending[i : i + _OPEN]
            try:
                for p in part:
                    _start(p, compress, max_bytes)
                list(pool.map(_sync, part))
            finally:
                for p in part:  # renamed when synced, else removed: no temporary file stays behind
                    _finish(p)
    try:
        if sync_dir:
            sync_folder(archive_dir)
    except OSError as exc:
        for p in pending:
            if p.error is None:
                p.error = f"cannot sync folder {archive_dir}: {exc}"
    for p in pending:
        if p.error is not None:
            p.owner.write_errors.append(p.error)
        else:
            _read_back(p, max_bytes)
