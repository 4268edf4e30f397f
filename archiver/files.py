"""Archive files: names, atomic writes, and a reader for every schema version.

Writes go to a temporary file in the same folder (``.tmp-*.part``, locked while it is
written), are fsynced, renamed over the target with ``os.replace`` and the folder is fsynced,
so a crash leaves the old file or the new one, never half of one; a temporary file whose
writer died is found by its free lock and removed (``remove_stale_parts``). A failed write
(disk full, permission denied) removes the temporary file and raises ``ArchiveWriteError``.

Reading is bounded: a file larger than the limit is refused before it is read, and a gzip
file is expanded as a stream that stops at the limit. Every path read from the index goes
through ``contained``: symlinks resolved, the file has to stay inside the archive folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import hashlib
import os
import re
import tempfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from archiver.errors import ArchiveWriteError
from archiver.fsutil import fsync_dir
from archiver.shape import RawJson
from archiver.versions import upgrade

if TYPE_CHECKING:
    from archiver.redact import Redactor

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ArchiveTooLarge",
    "archive_files_of",
    "archive_name",
    "contained",
    "content_hash",
    "document_name",
    "find_archives",
    "parse_archive",
    "read_archive",
    "read_plain",
    "remove_stale_parts",
    "sync_folder",
    "upgrade",
    "write_atomic",
]

# the largest archive octel reads or writes unless told otherwise (OCTEL_ARCHIVE_MAX_BYTES):
# parsing holds the text and its objects, several times its size
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


class ArchiveTooLarge(ValueError):
    """An archive (or what its gzip expands to) is larger than the size limit."""


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def _clean(part: str | None, default: str, limit: int = 48) -> str:
    # "__" separates the parts of a name, so no part may hold one (or start/end with "_")
    cleaned = re.sub(r"_{2,}", "_", _UNSAFE.sub("-", part or ""))[:limit].strip("._-")
    return cleaned or default


def archive_name(
    archived_at: str,
    depth: int,
    label: str | None,
    agent: str | None,
    session_id: str,
    *,
    compress: bool = False,
) -> str:
    """``<archived_at>__sub<depth>__<label>__<agent>__<session_id>.json[.gz]``, each part
    sanitised, so a sorted folder listing reads a tree top-down."""
    stamp = _clean(re.sub(r"\.\d+", "", archived_at.replace("-", "").replace(":", "")), "unknown-time")
    name = "__".join(
        [
            stamp,
            f"sub{max(0, int(depth))}",
            _clean(label, "nolabel"),
            _clean(agent, "noagent"),
            _clean(session_id, "nosession", 200),
        ]
    )
    return name + (".json.gz" if compress else ".json")


def document_name(doc: Mapping[str, Any], redactor: Redactor, *, compress: bool = False) -> tuple[str, str]:
    """The file name of an archive document and the session id to file it under, both built
    from redacted values: no secret may reach a path, the index or the document table (a
    session id is whatever a source or an imported file says it is)."""
    named, _ = redactor.redact_obj({k: doc.get(k) for k in ("label", "agent", "session_id")})
    sid = str(named["session_id"])
    stamp, depth = str(doc.get("archived_at") or "unknown-time"), int(doc.get("depth") or 0)
    return archive_name(stamp, depth, named["label"], named["agent"], sid, compress=compress), sid


def content_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sync_folder(folder: Path) -> None:
    """Make the renames into ``folder`` durable."""
    fsync_dir(folder)


def _locked_temp(folder: Path) -> tuple[int, str]:
    """A new temporary file in ``folder``, open and locked: the lock tells a cleaner that its
    writer is alive (a cleaner that took the file between creation and lock is noticed)."""
    while True:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=folder)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(tmp).st_ino == os.fstat(fd).st_ino:
                return fd, tmp
        except FileNotFoundError:
            pass
        os.close(fd)


def write_atomic(
    path: Path,
    data: bytes,
    *,
    compress: bool = False,
    sync_dir: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> None:
    """Write ``data`` to ``path`` atomically (gzip when ``compress``). A caller writing many
    files into one folder may pass ``sync_dir=False`` and call ``sync_folder`` once after.
    Data larger than ``max_bytes`` is refused: it could not be read back."""
    folder = path.parent
    if len(data) > max_bytes:
        raise ArchiveWriteError(str(path), f"{len(data)} bytes, more than the limit of {max_bytes}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = _locked_temp(folder)
    except OSError as exc:
        raise ArchiveWriteError(str(path), exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(gzip.compress(data, compresslevel=6, mtime=0) if compress else data)
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, path)  # while still locked: a cleaner never takes a finished file
        if sync_dir:
            fsync_dir(folder)
    except BaseException as exc:
        # a MemoryError or a cancellation must not leave a temporary file behind either
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ArchiveWriteError(str(path), exc.strerror or str(exc)) from exc
        raise


def remove_stale_parts(folder: Path) -> list[Path]:
    """Remove the temporary files of writers that died (their lock is free); a live writer's
    file is left alone. Returns what was removed."""
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for p in folder.glob(".tmp-*.part"):
            try:
                fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its writer holds it
            else:
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
                    removed.append(p)
            finally:
                os.close(fd)
    return removed


def contained(root: Path, archive_path: str | Path) -> Path | None:
    """The regular file ``archive_path`` names (relative to ``root``, or absolute), symlinks
    resolved, when it lies inside the resolved ``root``; None for anything else (missing,
    a symlink loop, outside the folder, not a regular file)."""
    try:
        base = root.resolve(strict=True)
        target = (base / archive_path).resolve(strict=True)
    except (OSError, RuntimeError, ValueError):
        return None
    if not target.is_relative_to(base) or target == base or not target.is_file():
        return None
    return target


def archive_files_of(listing: list[Path], session_id: str) -> list[Path]:
    """The files of one session in a folder listing, in the listing's order."""
    tail = f"__{_clean(session_id, 'nosession', 200)}"
    return [p for p in listing if _stem(p.name).endswith(tail)]


def find_archives(folder: Path, session_id: str | None = None) -> list[Path]:
    """Archive files directly in ``folder`` (of one session when given), sorted by name."""
    if not folder.is_dir():
        return []
    tail = f"__{_clean(session_id, 'nosession', 200)}" if session_id else ""
    out = [
        p
        for p in folder.iterdir()
        if not p.name.startswith(".")
        and (p.name.endswith(".json") or p.name.endswith(".json.gz"))
        and (not tail or _stem(p.name).endswith(tail))
        and p.is_file()
    ]
    return sorted(out)


def _stem(name: str) -> str:
    return name.removesuffix(".gz").removesuffix(".json")


def read_plain(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The JSON bytes of an archive file, gunzipped when it is compressed, at most
    ``max_bytes`` of them (``ArchiveTooLarge`` otherwise: a gzip file is expanded as a stream
    that stops at the limit). A damaged or truncated gzip file raises ``ValueError`` like any
    other unreadable archive."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ArchiveTooLarge(f"{path.name}: {size} bytes, more than the limit of {max_bytes}")
        # read what the file holds, not the limit: read(n) allocates n bytes up front
        raw = f.read(size + 1)
        if len(raw) > size:  # it grew since: the rest in chunks, up to the limit
            parts, total = [raw], len(raw)
            while total <= max_bytes and (chunk := f.read(min(_CHUNK, max_bytes + 1 - total))):
                parts.append(chunk)
                total += len(chunk)
            raw = b"".join(parts)
    if raw[:2] != b"\x1f\x8b":
        if len(raw) > max_bytes:  # it grew past the limit while being read
            raise ArchiveTooLarge(f"{path.name}: more than the limit of {max_bytes} bytes")
        return raw
    return _gunzip(raw, path.name, max_bytes)


def _gunzip(raw: bytes, name: str, max_bytes: int) -> bytes:
    out: list[bytes] = []
    total = 0
    data = raw
    try:
        while data.strip(b"\0"):  # one gzip member after another (zero padding ignored)
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while True:
                chunk = d.decompress(data, max_bytes + 1 - total)
                total += len(chunk)
                out.append(chunk)
                if total > max_bytes:
                    raise ArchiveTooLarge(f"{name}: expands to more than the limit of {max_bytes} bytes")
                if d.eof:
                    data = d.unused_data
                    break
                data = d.unconsumed_tail
                if not data:
                    raise EOFError  # the file ends inside a member
    except (EOFError, zlib.error) as exc:
        # a bare EOFError (truncated file) would read as "Aborted." to a command line
        raise ValueError(f"{name}: damaged gzip file ({exc or 'truncated'})") from None
    return b"".join(out)


def parse_archive(plain: bytes, name: str = "archive") -> RawJson:
    """The document in the JSON bytes ``plain`` in the newest layout."""
    doc = orjson.loads(plain)
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: not an archive (top level is not an object)")
    return upgrade(doc)


def read_archive(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> RawJson:
    """The document in ``path`` in the newest layout, whatever version wrote it."""
    return parse_archive(read_plain(path, max_bytes), path.name)
