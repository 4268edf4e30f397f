"""Archive documents kept in the database (``OCTEL_ARCHIVE_STORE=database``), beside their
index rows: the ``archive_document`` table and the store that reads and writes it.

One row per session (``session_id`` is unique), named as the folder store names its file, so
``archive_path`` means the same in both stores and an export writes the same files. The JSON
is kept compressed: zstd (level 3) reads twice as fast as gzip and writes four times as fast
for the same size on octel's archives; a ``gzip`` row (or one without compression) reads too.

Writing follows ``archiver.store``: ``put`` checks the size limit and validates the document
(JSON Schema and bounds) before anything is stored; ``flush(db)`` writes it in the caller's
transaction, the one that writes its index row, under the session's lock, replacing the
session's older document; ``confirm()`` reads each one back after the commit and compares it
with what was validated. Reading is bounded like a gzip file: a row whose document is larger
than the limit is refused before it is fetched, and decompression stops at the limit.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

import zstandard
from sqlalchemy import BigInteger, Column, LargeBinary, case, delete, update
from sqlalchemy.engine import Engine
from sqlmodel import Field, Session, SQLModel, col, select

from archiver.errors import ArchiveWriteError
from archiver.files import DEFAULT_MAX_BYTES, ArchiveTooLarge, content_hash, parse_archive
from archiver.store import ArchiveMissing, FolderStore, Stored
from archiver.validate import check_archive
from telemetry.store.columns import timestamp
from telemetry.store.db import session_scope
from telemetry.store.locks import lock_key
from telemetry.timeutil import utcnow

__all__ = ["ArchiveDocument", "DatabaseStore", "decode", "encode", "reading_in"]

ZSTD_LEVEL = 3
_CHUNK = 1 << 20
_REMOVE_BATCH = 500


class ArchiveDocument(SQLModel, table=True):
    """One session's archive document, compressed, beside its ``session_index`` row."""

    __tablename__ = "archive_document"

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(max_length=200, unique=True)
    name: str = Field(max_length=1000, unique=True)
    codec: str = Field(max_length=10)  # zstd, gzip or none
    size: int = Field(sa_type=BigInteger)  # of the JSON, uncompressed
    stored_size: int = Field(sa_type=BigInteger)
    content_hash: str = Field(max_length=128)  # of the JSON, as the index row has it
    data: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
    stored_at: datetime = timestamp()


class _DocumentValues(TypedDict):
    """An `archive_document` row's columns but its id and session, as a flush writes them."""

    name: str
    codec: str
    data: bytes
    size: int
    stored_size: int
    content_hash: str
    stored_at: datetime


def encode(plain: bytes) -> tuple[str, bytes]:
    return "zstd", zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(plain)


def decode(codec: str, blob: bytes, name: str, max_bytes: int, expected: int | None = None) -> bytes:
    """The JSON bytes of a stored document, decompressed as a stream that stops at the limit;
    a stream that ends early (fewer bytes than ``expected``) is damaged."""
    if codec == "none":
        out = blob
    elif codec in ("zstd", "gzip"):
        try:
            reader: Any = (
                zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob))
                if codec == "zstd"
                else gzip.GzipFile(fileobj=io.BytesIO(blob))
            )
            parts: list[bytes] = []
            total = 0
            # read(n) allocates n bytes up front: ask for the stored size when it is known
            step = _CHUNK if expected is None else max(1, min(_CHUNK, expected + 1))
            with reader:
                while chunk := reader.read(step):
                    total += len(chunk)
                    if total > max_bytes:
                        raise ArchiveTooLarge(f"{name}: expands to more than the limit of {max_bytes} bytes")
                    parts.append(chunk)
            out = b"".join(parts)
        except (zstandard.ZstdError, OSError, EOFError) as exc:
            raise ValueError(f"{name}: damaged {codec} document ({exc or 'truncated'})") from None
    else:
        raise ValueError(f"{name}: unknown compression {codec!r}")
    if len(out) > max_bytes:
        raise ArchiveTooLarge(f"{name}: more than the limit of {max_bytes} bytes")
    if expected is not None and len(out) != expected:
        raise ValueError(f"{name}: damaged document ({len(out)} bytes, {expected} stored)")
    return out


@dataclass
class _Held:
    name: str
    session_id: str
    codec: str
    blob: bytes
    size: int
    digest: str


def reading_in(store: Any, db: Session) -> Any:
    """``store``, reading through the caller's open transaction ``db`` when it is the database
    store: a session page reads its index row and its document in one snapshot, over one
    connection (no second checkout, which costs a round trip or two on PostgreSQL)."""
    if isinstance(store, DatabaseStore):
        return DatabaseStore(store.engine, store.max_bytes, db, store.fallback)
    return store


class DatabaseStore:
    """Archive documents in the ``archive_document`` table of the store at ``engine``.

    One instance per writer: ``put`` holds documents until ``flush``, and ``confirm`` reads
    back what the last ``flush`` wrote. Readers may share one instance."""

    kind = "database"

    def __init__(
        self,
        engine: Engine,
        max_bytes: int = DEFAULT_MAX_BYTES,
        db: Session | None = None,
        fallback: FolderStore | None = None,
    ) -> None:
        self.engine = engine
        self.max_bytes = max_bytes
        self._db = db  # reads go through this open transaction when given
        # a store that kept files before it moved to the database: rows still naming a file
        # there are read from it until `octel import archives` brings them in
        self.fallback = fallback
        self._held: dict[str, _Held] = {}
        self._flushed: dict[str, _Held] = {}

    def where(self, name: str) -> str:
        return f"database:{name}"

    def _first(self, stmt: Any) -> Any:
        if self._db is not None:
            return self._db.connection().execute(stmt).first()
        with self.engine.connect() as conn:
            return conn.execute(stmt).first()

    def stat(self, name: str) -> Stored | None:
        t = ArchiveDocument.__table__.c  # type: ignore[attr-defined]
        row = self._first(select(t.stored_size, t.content_hash, t.id).where(t.name == name))
        if row is None:
            return self.fallback.stat(name) if self.fallback is not None else None
        return Stored(name, row[0], (name, row[1], row[2]))

    def read(self, name: str) -> bytes:
        # one round trip; a document past the limit is refused without fetching it
        t = ArchiveDocument.__table__.c  # type: ignore[attr-defined]
        blob = case((t.size <= self.max_bytes, t.data), else_=None)
        row = self._first(select(t.size, t.codec, blob).where(t.name == name))
        if row is None:
            if self.fallback is not None and self.fallback.stat(name) is not None:
                return self.fallback.read(name)
            raise ArchiveMissing(f"archive {name} is not in the database (pruned?)")
        size, codec, data = row
        if data is None:
            raise ArchiveTooLarge(f"{name}: {size} bytes, more than the limit of {self.max_bytes}")
        return decode(codec, bytes(data), name, self.max_bytes, expected=size)

    def names(self, session_id: str | None = None) -> list[str]:
        q = select(ArchiveDocument.name)
        if session_id is not None:
            q = q.where(ArchiveDocument.session_id == session_id)
        with session_scope(self.engine, write=False) as db:
            return sorted(db.exec(q).all())

    def put(self, name: str, session_id: str, data: bytes, *, compress: bool = False) -> None:
        if len(data) > self.max_bytes:
            raise ArchiveWriteError(
                self.where(name), f"{len(data)} bytes, more than the limit of {self.max_bytes}"
            )
        check_archive(parse_archive(data, name))  # ValueError: nothing invalid is stored
        codec, blob = encode(data)
        self._held[name] = _Held(name, session_id, codec, blob, len(data), content_hash(data))

    def flush(self, transaction: Any, names: Iterable[str] | None = None) -> None:
        db: Session = transaction
        wanted = list(self._held) if names is None else [n for n in names if n in self._held]
        held = [self._held.pop(n) for n in wanted]
        for h in held:
            lock_key(db, "session", h.session_id)  # the index row takes the same lock
            values: _DocumentValues = {
                "name": h.name,
                "codec": h.codec,
                "data": h.blob,
                "size": h.size,
                "stored_size": len(h.blob),
                "content_hash": h.digest,
                "stored_at": utcnow(),
            }
            mine = ArchiveDocument.session_id == h.session_id
            old = db.exec(select(ArchiveDocument.id).where(mine)).first()
            if old is None:
                db.add(ArchiveDocument(session_id=h.session_id, **values))
            else:  # the session's older document is replaced: one document per session
                db.exec(update(ArchiveDocument).where(col(ArchiveDocument.id) == old).values(**values))
        db.flush()
        self._flushed.update((h.name, h) for h in held)

    def confirm(self, names: Iterable[str] | None = None) -> list[str]:
        problems: list[str] = []
        flushed, self._flushed = self._flushed, {}
        wanted = set(flushed) if names is None else set(names)
        for h in flushed.values():
            if h.name not in wanted:
                continue
            try:
                plain = self.read(h.name)
            except (OSError, ValueError) as exc:
                problems.append(f"archive {self.where(h.name)} failed its read-back: {exc}")
                continue
            if content_hash(plain) != h.digest:
                problems.append(f"archive {self.where(h.name)} read back differs from what was written")
        return problems

    def remove(self, names: Iterable[str]) -> list[str]:
        wanted = list(names)
        for i in range(0, len(wanted), _REMOVE_BATCH):
            with session_scope(self.engine) as db:
                chunk = wanted[i : i + _REMOVE_BATCH]
                db.exec(delete(ArchiveDocument).where(col(ArchiveDocument.name).in_(chunk)))
        return []
