"""Archive documents from the web: the legacy `/api/sessions/archived` endpoints and safe reading.

A file name from a request is checked against an allowlist first (the characters the archiver
writes: letters, digits, `.`, `_`, `-`, ending in `.json` or `.json.gz`, no separator), then read
through the app's archive store (in the folder: resolved with symlinks followed and required to
sit inside the resolved archive folder). The name is never decoded again after the framework's
one URL decoding, so `%2e%2e%2f` stays a `%` and fails the allowlist. Anything else is a 404
with the error envelope.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from cachetools import LRUCache
from fastapi import APIRouter, Query, Request

from archiver.files import DEFAULT_MAX_BYTES, parse_archive
from archiver.shape import RawJson
from archiver.store import ArchiveMissing, ArchiveStore
from telemetry.archive_store import archive_store
from telemetry.queries.models import ArchivedItem, ArchivedPage
from telemetry.queries.sessions import SessionFilter, list_sessions
from web.app_state import app_state
from web.deps import ReadDbDep, SettingsDep
from web.errors import ApiError

__all__ = [
    "ARCHIVED_LIMIT",
    "ArchiveCache",
    "archive_cache",
    "archive_store_of",
    "resolve_name",
    "router",
    "valid_name",
]

ARCHIVED_LIMIT = 500
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,400}\.json(?:\.gz)?")

router = APIRouter(prefix="/api/sessions", tags=["archives"])


def valid_name(name: str) -> bool:
    """True when `name` could be an archive file the archiver wrote (a bare name, no path)."""
    return _NAME.fullmatch(name) is not None


def resolve_name(root: Path, name: str) -> Path | None:
    """The existing regular file `name` inside `root`, symlinks resolved; None for anything else."""
    if not valid_name(name):
        return None
    try:
        base = root.resolve(strict=True)
        target = (base / name).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a symlink loop, unreadable
        return None
    if target.parent != base or not target.is_file():
        return None
    return target


class ArchiveCache:
    """Recently parsed archives, keyed by the store's version of each (a file's path, size and
    mtime; a database row's hash), least recently used first out once their JSON passes
    `max_bytes` in all: paging a timeline reads one document once, a rewritten one is read
    again, and memory stays bounded. An archive larger than the whole budget is parsed for its
    request and not kept."""

    def __init__(self, max_bytes: int, archive_max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._archive_max = archive_max_bytes  # no single document is read past it (ArchiveTooLarge)
        self._docs: LRUCache[Any, tuple[int, RawJson]] = LRUCache(
            maxsize=max_bytes, getsizeof=lambda entry: entry[0]
        )
        self._lock = threading.Lock()  # sync routes run in a thread pool

    @property
    def bytes_held(self) -> int:
        return int(self._docs.currsize)

    def read(self, store: ArchiveStore, name: str) -> RawJson:
        st = store.stat(name)
        if st is None:
            store.read(name)  # says why: outside the folder, or not there
            raise ArchiveMissing(f"archive {name} is not there (pruned or moved?)")
        key = (store.kind, st.version)
        with self._lock:
            entry = self._docs.get(key)
        if entry is not None:
            return entry[1]
        plain = store.read(name)
        if len(plain) > self._archive_max:
            raise ValueError(f"{name}: more than the limit of {self._archive_max} bytes")
        doc = parse_archive(plain, name)  # any version, brought to the newest layout
        if 0 < len(plain) <= self._docs.maxsize:
            with self._lock:
                self._docs[key] = (len(plain), doc)
        return doc


@dataclass(frozen=True, slots=True)
class _ReadStore:
    """The archive store the app's readers share."""

    store: ArchiveStore


def archive_cache(request: Request) -> ArchiveCache:
    """The app's cache of parsed archives, made once."""
    state = app_state(request.app)
    s = state.settings
    return state.made(ArchiveCache, lambda: ArchiveCache(s.archive_cache_bytes, s.archive_max_bytes))


def archive_store_of(request: Request) -> ArchiveStore:
    """The app's archive store (`OCTEL_ARCHIVE_STORE`), made once: readers share it."""
    state = app_state(request.app)
    return state.made(_ReadStore, lambda: _ReadStore(archive_store(state.settings, state.engine))).store


def _not_found(name: str) -> ApiError:
    return ApiError(404, "not_found", f"no archive file named {name!r}")


@router.get("/archived", response_model=ArchivedPage)
def archived(db: ReadDbDep, limit: Annotated[int, Query(ge=1, le=ARCHIVED_LIMIT)] = 100) -> ArchivedPage:
    """Newest archived sessions first, at most `limit` (≤ 500), with their file names."""
    page = list_sessions(db, SessionFilter(limit=limit))
    items = [
        ArchivedItem(
            file=Path(s.archive_path).name, **s.model_dump(include=set(ArchivedItem.model_fields) - {"file"})
        )
        for s in page.items
    ]
    return ArchivedPage(items=items, count=len(items), limit=limit, truncated=page.next_cursor is not None)


@router.get("/archived/detail", response_model=RawJson)
def archived_detail(
    request: Request, settings: SettingsDep, file: Annotated[str, Query(description="an archive file name")]
) -> RawJson:
    """The archive document named `file` (its file name in the archive folder)."""
    if not valid_name(file):
        raise _not_found(file)
    try:
        return archive_cache(request).read(archive_store_of(request), file)
    except FileNotFoundError:
        raise _not_found(file) from None
    except (OSError, ValueError, EOFError) as e:
        raise ApiError(500, "archive_unreadable", f"archive {file!r} cannot be read: {e}") from None
