"""A session's archive file, found and read by one rule, and the per-turn entries in it.

`archive_location` is the one place that turns an index row's `archive_path` into a file: the
CLI, the web API, `octel why`, `octel detect` and pruning all go through it. `read_archive`
reads every archive version (plain or gzip) and upgrades it to the newest layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from archiver.files import read_archive
from archiver.metrics import per_turn

__all__ = ["ArchiveRead", "archive_location", "open_archive", "turns_of"]

ArchiveRead = tuple[dict[str, Any] | None, str | None]


def archive_location(archive_dir: Path, archive_path: str) -> Path | None:
    """Where an index row's archive lives, or None when the path leaves the archive folder.

    The one containment rule every reader follows: the path is resolved (symlinks followed)
    under the resolved archive folder and must stay inside it, absolute or not (`octel import
    archives` copies files from other folders into the archive folder, so no row needs more).
    """
    p = Path(archive_path)
    try:
        base = archive_dir.resolve()
        target = (base / p).resolve()
    except (OSError, RuntimeError):  # a symlink loop, an unreadable folder
        return None
    return target if target.is_relative_to(base) else None


def open_archive(
    archive_dir: Path, archive_path: str, read: Callable[[Path], dict[str, Any]] = read_archive
) -> ArchiveRead:
    """(document, None), or (None, why it cannot be read): outside the folder, gone, unreadable."""
    path = archive_location(archive_dir, archive_path)
    if path is None:
        return None, f"archive file {archive_path} is outside the archive folder"
    if not path.is_file():
        return None, f"archive file {archive_path} is not there (pruned or moved?)"
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
