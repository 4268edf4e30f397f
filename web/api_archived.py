"""Archive files from the web: the legacy `/api/sessions/archived` endpoints and safe reading.

A file name from a request is checked against an allowlist first (the characters the archiver
writes: letters, digits, `.`, `_`, `-`, ending in `.json` or `.json.gz`, no separator), then resolved
with symlinks followed and required to sit inside the resolved archive folder. The name is
never decoded again after the framework's one URL decoding, so `%2e%2e%2f` stays a `%` and
fails the allowlist. Anything else is a 404 with the error envelope.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from archiver.files import read_archive
from telemetry.queries.models import ArchivedItem, ArchivedPage
from telemetry.queries.sessions import SessionFilter, list_sessions
from web.deps import ReadDbDep, SettingsDep
from web.errors import ApiError

__all__ = [
    "ARCHIVED_LIMIT",
    "ArchiveCache",
    "archive_cache",
    "resolve_name",
    "router",
    "valid_name",
]

ARCHIVED_LIMIT = 500
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,400}\.json(?:\.gz)?")
_CACHE_ENTRIES = 8

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
    """The last few parsed archives, keyed by path, size and mtime: paging a timeline reads
    one file once, and a rewritten file is read again."""

    def __init__(self, entries: int = _CACHE_ENTRIES) -> None:
        self._entries = entries
        self._docs: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()

    def read(self, path: Path) -> dict[str, Any]:
        st = path.stat()
        key = (str(path), st.st_size, st.st_mtime_ns)
        doc = self._docs.get(key)
        if doc is None:
            doc = read_archive(path)  # any version, brought to the newest layout
            self._docs[key] = doc
            while len(self._docs) > self._entries:
                self._docs.popitem(last=False)
        else:
            self._docs.move_to_end(key)
        return doc


def archive_cache(request: Request) -> ArchiveCache:
    cache: ArchiveCache | None = getattr(request.app.state, "archive_cache", None)
    if cache is None:
        cache = request.app.state.archive_cache = ArchiveCache()
    return cache


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


@router.get("/archived/detail", response_model=dict[str, Any])
def archived_detail(
    request: Request, settings: SettingsDep, file: Annotated[str, Query(description="an archive file name")]
) -> dict[str, Any]:
    """The archive document in the file `file` of the archive folder."""
    path = resolve_name(settings.archives, file)
    if path is None:
        raise _not_found(file)
    try:
        return archive_cache(request).read(path)
    except FileNotFoundError:
        raise _not_found(file) from None
    except (OSError, ValueError, EOFError) as e:
        raise ApiError(500, "archive_unreadable", f"archive {file!r} cannot be read: {e}") from None
