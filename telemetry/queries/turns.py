"""Per-turn data of one session, read from its archive file when the file is there.

`archiver.files.read_archive` reads every archive version (plain or gzip) and upgrades it to
the newest layout; per-turn entries are its `per_turn` list (computed from the messages with
`archiver.metrics.per_turn` for a document without one).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archiver.files import contained, read_archive
from archiver.metrics import per_turn

__all__ = ["ArchiveUnreadable", "archive_file", "archive_in_folder", "load_archive", "turns_of"]


class ArchiveUnreadable(Exception):
    """The archive file exists but could not be read; the message says why."""


def archive_file(archive_dir: Path, archive_path: str) -> Path:
    """Where an index row's archive lives: absolute as stored, else under the archive folder."""
    p = Path(archive_path)
    return p if p.is_absolute() else archive_dir / p


def archive_in_folder(archive_dir: Path, archive_path: str) -> Path | None:
    """The archive file an index row names, when it is a regular file inside the archive
    folder once symlinks are resolved (the one rule every reader follows); None otherwise."""
    return contained(archive_dir, archive_path)


def load_archive(path: Path | None) -> dict[str, Any] | None:
    """The archive document, or None when the file is gone (pruned or moved) or not in the
    archive folder."""
    if path is None or not path.is_file():
        return None
    try:
        return read_archive(path)
    except (OSError, ValueError) as e:  # orjson.JSONDecodeError is a ValueError
        raise ArchiveUnreadable(f"cannot read archive {path}: {e}") from None


def turns_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-turn entries of an archive document, in order."""
    for key in ("per_turn", "turns"):
        turns = doc.get(key)
        if isinstance(turns, list):
            return [dict(t) for t in turns if isinstance(t, Mapping)]
    messages = doc.get("messages")
    if isinstance(messages, list):
        return per_turn([m for m in messages if isinstance(m, Mapping)])
    return []
