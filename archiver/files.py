"""Archive files: names, atomic writes, and a reader for every schema version.

Writes go to a temporary file in the same folder, are fsynced, renamed over the target with
``os.replace`` and the folder is fsynced, so a crash leaves the old file or the new one, never
half of one. A failed write (disk full, permission denied) removes the temporary file and
raises ``ArchiveWriteError``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import os
import re
import tempfile
import zlib
from pathlib import Path
from typing import Any

import orjson

from archiver.errors import ArchiveWriteError
from archiver.fsutil import fsync_dir
from archiver.metrics import per_turn, totals

__all__ = [
    "archive_files_of",
    "archive_name",
    "content_hash",
    "find_archives",
    "parse_archive",
    "read_archive",
    "read_plain",
    "remove_older",
    "sync_folder",
    "upgrade",
    "write_atomic",
]

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


def content_hash(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def sync_folder(folder: Path) -> None:
    """Make the renames into ``folder`` durable."""
    fsync_dir(folder)


def write_atomic(path: Path, data: bytes, *, compress: bool = False, sync_dir: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (gzip when ``compress``). A caller writing many
    files into one folder may pass ``sync_dir=False`` and call ``sync_folder`` once after."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=folder)
    except OSError as exc:
        raise ArchiveWriteError(str(path), exc.strerror or str(exc)) from exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(gzip.compress(data, compresslevel=6, mtime=0) if compress else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        if sync_dir:
            fsync_dir(folder)
    except BaseException as exc:
        # a MemoryError or a cancellation must not leave a temporary file behind either
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ArchiveWriteError(str(path), exc.strerror or str(exc)) from exc
        raise


def remove_older(folder: Path, session_id: str, keep: Path, listing: list[Path] | None = None) -> list[Path]:
    """Delete other archive files of the same session (another ``archived_at``); ``listing``
    is a folder listing taken before, to spare one per file when writing many."""
    removed: list[Path] = []
    candidates = (
        find_archives(folder, session_id) if listing is None else archive_files_of(listing, session_id)
    )
    for p in candidates:
        if p.name != keep.name:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
                removed.append(p)
    return removed


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


def read_plain(path: Path) -> bytes:
    """The JSON bytes of an archive file, gunzipped when it is compressed. A damaged or
    truncated gzip file raises ``ValueError`` like any other unreadable archive."""
    raw = path.read_bytes()
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        # a bare EOFError (truncated file) would read as "Aborted." to a command line
        raise ValueError(f"{path.name}: damaged gzip file ({exc or 'truncated'})") from None


def parse_archive(plain: bytes, name: str = "archive") -> dict[str, Any]:
    """The document in the JSON bytes ``plain`` in the newest layout."""
    doc = orjson.loads(plain)
    if not isinstance(doc, dict):
        raise ValueError(f"{name}: not an archive (top level is not an object)")
    return upgrade(doc)


def read_archive(path: Path) -> dict[str, Any]:
    """The document in ``path`` in the newest layout, whatever version wrote it."""
    return parse_archive(read_plain(path), path.name)


def upgrade(doc: dict[str, Any]) -> dict[str, Any]:
    """Bring an older layout to v3. v2 lacks ``source.kind`` (always OpenCode), ``claude`` and
    ``cost_check``; v1 holds one session's messages with ``per_turn`` and ``state_history``, no
    tree fields."""
    version = doc.get("schema_version", doc.get("version", 1))
    if version == 3:
        return doc
    if version == 2:
        return _v2_to_v3(doc)
    if version != 1:
        raise ValueError(f"unknown archive schema version {version!r}")
    return _v2_to_v3(_v1_to_v2(doc))


def _v2_to_v3(doc: dict[str, Any]) -> dict[str, Any]:
    source = doc.get("source")
    return {
        **doc,
        "schema_version": 3,
        "upgraded_from": doc.get("upgraded_from", 2),
        "source": {**(source if isinstance(source, dict) else {}), "kind": "opencode"},
        "claude": None,
        "cost_check": None,
    }


def _v1_to_v2(doc: dict[str, Any]) -> dict[str, Any]:
    messages = doc.get("messages") or []
    if not isinstance(messages, list):
        raise ValueError("v1 archive without a message list")
    raw_session = doc.get("session")
    session: dict[str, Any] = raw_session if isinstance(raw_session, dict) else {}
    sid = doc.get("session_id") or session.get("id")
    if not sid:
        infos = [m.get("info", {}) for m in messages if isinstance(m, dict)]
        sid = next((i.get("sessionID") for i in infos if i.get("sessionID")), None)
    if not sid:
        raise ValueError("v1 archive without a session id")
    # v1 per_turn entries held fewer fields: recompute them from the messages
    fresh = per_turn(messages)
    own = totals(messages, fresh)
    title = doc.get("title") or session.get("title")
    return {
        "schema_version": 2,
        "upgraded_from": 1,
        "archived_at": doc.get("archived_at"),
        "archiver_version": doc.get("archiver_version"),
        "source": {
            "server_url": doc.get("server_url"),
            "opencode_version": doc.get("opencode_version") or session.get("version"),
            "messages_route": "classic",
        },
        "label": doc.get("label"),
        "session_id": sid,
        "root_session_id": sid,
        "parent_session_id": None,
        "depth": 0,
        "agent": doc.get("agent") or session.get("agent"),
        "subagent_title": None,
        "title": title,
        "model": doc.get("model"),
        "session": {**session, "id": sid, "title": title},
        "messages": messages,
        "diff": None,
        "todo": None,
        "per_turn": fresh,
        "totals": own,
        "subtree": {
            "sessions": 1,
            "turns": own["turns"],
            "tool_calls": own["tool_calls"],
            "tokens": dict(own["tokens"]),
            "cost": own["cost"],
            "tokens_total": own["tokens_total"],
        },
        "status_history": doc.get("state_history") or [],
        "permission_events": [],
        "walk_errors": [],
        "findings": doc.get("findings") or [],
        "verdict": doc.get("verdict") or "healthy",
        "redaction": doc.get("redaction") or {},
    }
