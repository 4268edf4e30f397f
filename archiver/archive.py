"""Archive a whole session tree: walk, build documents, redact, write; never raises.

The result lists the files written, the index records (``SessionRecord``), redaction counts
and every error; a caller decides from ``complete`` whether it is safe to delete the tree.
Documents go to an ``archiver.store.ArchiveStore`` (a folder, or the database). A file counts
as written only once it has been read back, parsed and validated against its schema (the
database store validates before its transaction and reads back after it: ``confirm``). Older
files of the same sessions are listed in ``superseded``: a caller that indexes removes them
after its index commit (``remove_superseded``), so a crash at any moment leaves every index
row pointing at a document that exists.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import orjson

from archiver.document import build_documents
from archiver.errors import ArchiveWriteError, WalkErrorDoc
from archiver.files import (
    DEFAULT_MAX_BYTES,
    content_hash,
    document_name,
    parse_archive,
    read_plain,
)
from archiver.record import SessionRecord, record_from_doc
from archiver.redact import Redactor
from archiver.store import ArchiveStore, FolderStore, as_store
from archiver.validate import check_archive
from archiver.walk import TreeSnapshot, walk_tree

if TYPE_CHECKING:  # an import of files (Claude Code) never loads the HTTP client
    from archiver.client import OpenCodeClient

__all__ = [
    "ArchiveResult",
    "archive_tree",
    "delete_tree",
    "now_iso",
    "redact_record",
    "remove_superseded",
    "serialise",
    "serialise_held",
    "verify_written",
    "write_documents",
]

# what identifies a record, never free text: left as it is
_RECORD_KEYS = frozenset(
    {"session_id", "root_session_id", "parent_session_id", "archived_at", "archive_path", "content_hash"}
)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class ArchiveResultDoc(TypedDict):
    """An ``ArchiveResult`` as ``octel archive`` and the API print it."""

    root_session_id: str
    archived_at: str
    complete: bool
    sessions: int
    messages: int
    files: list[str]
    kept: list[str]
    walk_errors: list[WalkErrorDoc]
    write_errors: list[str]
    redaction: dict[str, int]
    deleted: bool
    delete_error: str | None
    requests: int


@dataclass
class ArchiveResult:
    root_session_id: str
    archived_at: str
    # names of the documents written (read back and valid), in the store below
    written: list[str] = field(default_factory=list)
    records: list[SessionRecord] = field(default_factory=list)
    walk_errors: list[WalkErrorDoc] = field(default_factory=list)
    write_errors: list[str] = field(default_factory=list)
    redaction: dict[str, int] = field(default_factory=dict)
    sessions_found: int = 0
    messages: int = 0
    requests: int = 0
    deleted: bool = False
    delete_error: str | None = None
    # existing archives kept because this walk could not fetch their session's messages
    kept: list[str] = field(default_factory=list)
    # older documents of the sessions written: removed once the new ones are indexed
    superseded: list[str] = field(default_factory=list)
    store: ArchiveStore | None = field(default=None, repr=False, compare=False)

    @property
    def files(self) -> list[Path]:
        """The files written, when the store is a folder."""
        if not isinstance(self.store, FolderStore):
            return []
        return [self.store.folder / n for n in self.written]

    def where(self, names: list[str]) -> list[str]:
        return [self.store.where(n) for n in names] if self.store is not None else list(names)

    @property
    def complete(self) -> bool:
        """Every session of the tree was fetched in full, written, read back and valid."""
        return (
            self.sessions_found > 0
            and not self.walk_errors
            and not self.write_errors
            and len(self.written) == self.sessions_found
        )

    def to_dict(self) -> ArchiveResultDoc:
        return {
            "root_session_id": self.root_session_id,
            "archived_at": self.archived_at,
            "complete": self.complete,
            "sessions": self.sessions_found,
            "messages": self.messages,
            "files": self.where(self.written),
            "kept": self.where(self.kept),
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
    doc: Mapping[str, Any], store: ArchiveStore, redactor: Redactor, result: ArchiveResult
) -> bool:
    """Keep the session's existing archive instead of replacing it with ``doc``, whose messages
    could not be fetched, when that archive has its messages; its record is indexed again
    (unchanged values move no counter). False when there is no such archive to keep."""
    sid = str(doc["session_id"])
    for older in reversed(store.names(sid)):
        try:
            plain = store.read(older)
            old_doc = parse_archive(plain, older)
        except (OSError, ValueError):
            continue
        if _messages_failed(old_doc):
            continue
        result.kept.append(older)
        record = record_from_doc(old_doc, older, content_hash(plain))
        result.records.append(redact_record(record, redactor))
        return True
    return False


def serialise(
    doc: Mapping[str, Any], redactor: Redactor, before: Mapping[str, int] | None = None
) -> tuple[bytes, dict[str, int]]:
    """The redacted JSON bytes of a document, its redaction counts appended as the last key
    (``before``: the counts of text in it that was redacted when an earlier archive was made)."""
    data, counts, _ = serialise_held(doc, redactor, before)
    return data, counts


def serialise_held(
    doc: Mapping[str, Any], redactor: Redactor, before: Mapping[str, int] | None = None
) -> tuple[bytes, dict[str, int], dict[str, Any] | None]:
    """``serialise``, and the document its bytes hold when the redactor found nothing to
    replace in them (the bytes are then the document's own serialisation, so parsing them
    again would give it back): None when it replaced something (parse the bytes)."""
    rest = {k: v for k, v in doc.items() if k != "redaction"}
    body = orjson.dumps(rest)
    counts: Counter[str] = Counter(before or {})
    red = redactor.redact_json(body, counts)  # the very object given back when nothing matched
    counts_d = dict(sorted(counts.items()))
    data = red[:-1] + b',"redaction":' + orjson.dumps(counts_d) + b"}"
    return data, counts_d, ({**rest, "redaction": counts_d} if red is body else None)


def verify_written(path: Path, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
    """Read ``path`` back: the bytes written, a document that parses and is valid against
    its schema; ``ValueError`` (or ``OSError``) says what is wrong."""
    plain = read_plain(path, max_bytes)
    if plain != data:
        raise ValueError("the file read back differs from what was written")
    check_archive(parse_archive(plain, path.name))


def write_documents(
    docs: Sequence[Mapping[str, Any]],
    store: ArchiveStore | Path,
    redactor: Redactor,
    result: ArchiveResult,
    *,
    compress: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> None:
    """Redact, name and ``put`` each document into ``store`` (a folder given as a path is a
    ``FolderStore``); a document that cannot be written is a ``write_errors`` entry."""
    store = as_store(store, max_bytes)
    result.store = store
    # gzip is a file format: the database store compresses every document its own way
    compress = compress and isinstance(store, FolderStore)
    total: Counter[str] = Counter()
    if isinstance(store, FolderStore):
        store.remove_stale()
    for doc in docs:
        if _messages_failed(doc) and _keep_older(doc, store, redactor, result):
            continue
        data, counts = serialise(doc, redactor)
        total.update(counts)
        name, sid = document_name(doc, redactor, compress=compress)
        older = store.names(sid)
        try:
            store.put(name, sid, data, compress=compress)
        except ArchiveWriteError as exc:
            result.write_errors.append(str(exc))
            continue
        except (OSError, ValueError) as exc:
            result.write_errors.append(f"archive {store.where(name)} failed its read-back: {exc}")
            continue
        result.superseded += [n for n in older if n != name]
        result.written.append(name)
        # the parts from the bytes written: `doc` itself is not redacted
        record = record_from_doc(orjson.loads(data), name, content_hash(data))
        result.records.append(redact_record(record, redactor))
    if result.written and isinstance(store, FolderStore):
        try:
            store.sync()
        except ArchiveWriteError as exc:
            result.write_errors.append(f"cannot sync folder {store.folder}: {exc.reason}")
    result.redaction = dict(sorted(total.items()))


def remove_superseded(result: ArchiveResult) -> None:
    """Remove the older documents of the sessions written (call after the index commit)."""
    if result.superseded and result.store is not None:
        result.store.remove(result.superseded)
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
    store: ArchiveStore | Path,
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
    """Walk ``root_id`` and write one archive document per session into ``store``. A caller
    that indexes passes ``keep_superseded`` and removes the older documents after its commit
    (and, for the database store, flushes them into its index transaction)."""
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
        write_documents(docs, store, redactor, result, compress=compress, max_bytes=max_bytes)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
        return result
    if not keep_superseded:
        remove_superseded(result)
    if delete_after:
        await delete_tree(client, result)
    return result
