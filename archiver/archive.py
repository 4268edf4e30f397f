"""Archive a whole session tree: walk, build documents, redact, write; never raises.

The result lists the files written, the index records (``SessionRecord``), redaction counts
and every error; a caller decides from ``complete`` whether it is safe to delete the tree.
A file counts as written only once it has been read back, parsed and validated against its
schema. Older files of the same sessions are listed in ``superseded``: a caller that indexes
removes them after its index commit (``remove_superseded``), so a crash at any moment leaves
every index row pointing at a file that exists.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from archiver.client import OpenCodeClient
from archiver.document import build_documents
from archiver.errors import ArchiveWriteError
from archiver.files import (
    DEFAULT_MAX_BYTES,
    archive_files_of,
    archive_name,
    content_hash,
    find_archives,
    parse_archive,
    read_plain,
    remove_stale_parts,
    sync_folder,
    write_atomic,
)
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.validate import check_archive
from archiver.walk import TreeSnapshot, walk_tree

__all__ = [
    "ArchiveResult",
    "archive_tree",
    "delete_tree",
    "now_iso",
    "redact_record",
    "remove_superseded",
    "serialise",
    "verify_written",
    "write_documents",
]

# what identifies a record, never free text: left as it is
_RECORD_KEYS = frozenset(
    {"session_id", "root_session_id", "parent_session_id", "archived_at", "archive_path", "content_hash"}
)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class ArchiveResult:
    root_session_id: str
    archived_at: str
    files: list[Path] = field(default_factory=list)
    records: list[SessionRecord] = field(default_factory=list)
    walk_errors: list[dict[str, Any]] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    redaction: dict[str, int] = field(default_factory=dict)
    sessions_found: int = 0
    messages: int = 0
    requests: int = 0
    deleted: bool = False
    delete_error: str | None = None
    # existing archives kept because this walk could not fetch their session's messages
    kept: list[Path] = field(default_factory=list)
    # older files of the sessions written: removed once the new ones are indexed
    superseded: list[Path] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Every session of the tree was fetched in full, written, read back and valid."""
        return (
            self.sessions_found > 0
            and not self.walk_errors
            and not self.write_errors
            and len(self.files) == self.sessions_found
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_session_id": self.root_session_id,
            "archived_at": self.archived_at,
            "complete": self.complete,
            "sessions": self.sessions_found,
            "messages": self.messages,
            "files": [str(p) for p in self.files],
            "kept": [str(p) for p in self.kept],
            "walk_errors": self.walk_errors,
            "write_errors": self.write_errors,
            "redaction": self.redaction,
            "deleted": self.deleted,
            "delete_error": self.delete_error,
            "requests": self.requests,
        }


def redact_record(record: SessionRecord, redactor: Redactor) -> SessionRecord:
    """The record with every free-text field (and its findings) redacted."""
    texts = {
        f.name: getattr(record, f.name)
        for f in dataclasses.fields(record)
        if f.name not in _RECORD_KEYS and isinstance(getattr(record, f.name), str)
    }
    red, _ = redactor.redact_obj({"texts": texts, "findings": list(record.findings)})
    return dataclasses.replace(record, **red["texts"], findings=tuple(red["findings"]))


def _messages_failed(doc: Mapping[str, Any]) -> bool:
    """The session's own messages could not be fetched (in full) by this walk."""
    sid = doc.get("session_id")
    return any(
        e.get("session_id") == sid and e.get("what") == "messages" for e in doc.get("walk_errors") or []
    )


def _keep_older(
    doc: Mapping[str, Any],
    archive_dir: Path,
    listing: list[Path],
    redactor: Redactor,
    result: ArchiveResult,
) -> bool:
    """Keep the session's existing archive instead of replacing it with ``doc``, whose messages
    could not be fetched, when that archive has its messages; its record is indexed again
    (unchanged values move no counter). False when there is no such archive to keep."""
    sid = str(doc["session_id"])
    for older in reversed(archive_files_of(listing, sid)):
        try:
            plain = read_plain(older)
            old_doc = parse_archive(plain, older.name)
        except (OSError, ValueError):
            continue
        if _messages_failed(old_doc):
            continue
        result.kept.append(older)
        record = record_from_doc(old_doc, older.name, content_hash(plain))
        result.records.append(redact_record(record, redactor))
        return True
    return False


def serialise(doc: Mapping[str, Any], redactor: Redactor) -> tuple[bytes, dict[str, int]]:
    """The redacted JSON bytes of a document, its redaction counts appended as the last key."""
    body = orjson.dumps({k: v for k, v in doc.items() if k != "redaction"})
    counts: Counter[str] = Counter()
    red = redactor.redact_json(body, counts)
    counts_d = dict(sorted(counts.items()))
    return red[:-1] + b',"redaction":' + orjson.dumps(counts_d) + b"}", counts_d


def verify_written(path: Path, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Read ``path`` back: the bytes written, a document that parses and is valid against
    its schema; ``ValueError`` (or ``OSError``) says what is wrong."""
    plain = read_plain(path, max_bytes)
    if plain != data:
        raise ValueError("the file read back differs from what was written")
    check_archive(parse_archive(plain, path.name))


def write_documents(
    docs: Sequence[Mapping[str, Any]],
    archive_dir: Path,
    redactor: Redactor,
    result: ArchiveResult,
    *,
    compress: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> None:
    total: Counter[str] = Counter()
    remove_stale_parts(archive_dir)
    listing = find_archives(archive_dir)
    for doc in docs:
        if _messages_failed(doc) and _keep_older(doc, archive_dir, listing, redactor, result):
            continue
        data, counts = serialise(doc, redactor)
        total.update(counts)
        # the name is built from redacted values: no secret may reach a path or the index
        named, _ = redactor.redact_obj({"label": doc.get("label"), "agent": doc.get("agent")})
        name = archive_name(
            str(doc["archived_at"]),
            int(doc["depth"]),
            named["label"],
            named["agent"],
            str(doc["session_id"]),
            compress=compress,
        )
        path = archive_dir / name
        try:
            write_atomic(path, data, compress=compress, sync_dir=False, max_bytes=max_bytes)
            verify_written(path, data, max_bytes)
        except ArchiveWriteError as exc:
            result.write_errors.append(str(exc))
            continue
        except (OSError, ValueError) as exc:
            result.write_errors.append(f"archive {path} failed its read-back: {exc}")
            continue
        result.superseded += [p for p in archive_files_of(listing, str(doc["session_id"])) if p.name != name]
        result.files.append(path)
        record = record_from_doc(doc, name, content_hash(data))
        result.records.append(redact_record(record, redactor))
    if result.files:
        try:
            sync_folder(archive_dir)
        except OSError as exc:
            result.write_errors.append(f"cannot sync folder {archive_dir}: {exc}")
    result.redaction = dict(sorted(total.items()))


def remove_superseded(result: ArchiveResult) -> None:
    """Remove the older files of the sessions written (call after the index commit)."""
    for p in result.superseded:
        with contextlib.suppress(FileNotFoundError):
            p.unlink()
    result.superseded = []


async def delete_tree(client: OpenCodeClient, result: ArchiveResult) -> None:
    """Delete the tree on the server, only when every session was archived and read back."""
    if not result.complete:
        result.delete_error = "not deleted: the tree was not archived in full"
        return
    try:
        result.deleted = await client.delete(result.root_session_id)
    except Exception as exc:
        result.delete_error = f"{type(exc).__name__}: {exc}"


async def archive_tree(
    client: OpenCodeClient,
    root_id: str,
    archive_dir: Path,
    redactor: Redactor,
    *,
    label: str | None = None,
    compress: bool = False,
    status_history: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    permission_events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    max_depth: int = 8,
    delete_after: bool = False,
    tree: TreeSnapshot | None = None,
    keep_superseded: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> ArchiveResult:
    """Walk ``root_id`` and write one archive file per session into ``archive_dir``. A caller
    that indexes passes ``keep_superseded`` and removes the older files after its commit."""
    archived_at = now_iso()
    result = ArchiveResult(root_id, archived_at)
    try:
        snap = tree or await walk_tree(client, root_id, max_depth=max_depth)
        result.sessions_found = len(snap.sessions)
        result.messages = sum(len(s.messages) for s in snap.sessions)
        result.requests = snap.requests
        result.walk_errors = [e.to_dict() for e in snap.walk_errors]
        docs = build_documents(
            snap,
            archived_at=archived_at,
            label=label,
            status_history=status_history,
            permission_events=permission_events,
        )
        write_documents(docs, archive_dir, redactor, result, compress=compress, max_bytes=max_bytes)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
        return result
    if not keep_superseded:
        remove_superseded(result)
    if delete_after:
        await delete_tree(client, result)
    return result
