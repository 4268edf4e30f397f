"""A session's archive file, found and read by one rule, and the per-turn entries in it.

`archive_location` is the one place that turns an index row's `archive_path` into a file: the
CLI, the web API, `octel why`, `octel detect` and pruning all go through it. `read_archive`
reads every archive version (plain or gzip) and upgrades it to the newest layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from archiver.files import contained, read_archive
from archiver.metrics import per_turn

__all__ = ["ArchiveRead", "archive_location", "open_archive", "turns_of"]

ArchiveRead = tuple[dict[str, Any] | None, str | None]
_GONE = "pruned or moved, or outside the archive folder"


def archive_location(archive_dir: Path, archive_path: str) -> Path | None:
    """The archive file an index row names, or None when there is none to read.

    A relative path goes through `archiver.files.contained`: resolved (symlinks followed), it
    must be a regular file inside the resolved archive folder. An absolute path is one
    `octel import archives` stored for files it indexed in another folder, read where it is.
    """
    p = Path(archive_path)
    if p.is_absolute():
        return p if p.is_file() else None
    return contained(archive_dir, p)


def open_archive(
    archive_dir: Path, archive_path: str, read: Callable[[Path], dict[str, Any]] = read_archive
) -> ArchiveRead:
    """(document, None), or (None, why it cannot be read): outside the folder, gone, unreadable."""
    path = archive_location(archive_dir, archive_path)
    if path is None:
        return None, f"archive file {archive_path} is not there: {_GONE}"
    try:
        return read(path), None
    except (OSError, ValueError, EOFError) as e:  # orjson.JSONDecodeError is a ValueError
        return None, f"cannot read archive {archive_path}: {e}"


def turns_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-turn entries of an archive document, in order (computed when the document has none)."""
    for key in ("per_turn", "turns"):
        turns = doc.get(key)
        if isinstance(turns, list):
            return [dict(t) for t in turns if isinstance(t, Mapping)]
    messages = doc.get("messages")
    if isinstance(messages, list):
        return per_turn([m for m in messages if isinstance(m, Mapping)])
    return []
