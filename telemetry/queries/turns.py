"""Per-turn data of one session, read from its archive file when the file is there.

The archive reader in `archiver` understands every archive version; when it is not available
the file is read as JSON. Per-turn entries come from the archive's `turns` (or, for a file
without them, are computed from its messages with `archiver.metrics.per_turn`).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from archiver.metrics import per_turn

__all__ = ["ArchiveUnreadable", "archive_file", "load_archive", "turns_of"]


class ArchiveUnreadable(Exception):
    """The archive file exists but could not be read; the message says why."""


def archive_file(archive_dir: Path, archive_path: str) -> Path:
    """Where an index row's archive lives: absolute as stored, else under the archive folder."""
    p = Path(archive_path)
    return p if p.is_absolute() else archive_dir / p


def _reader() -> Any:
    for module, name in (("archiver.reader", "read_archive"), ("archiver.archive", "read_archive")):
        try:
            fn = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if callable(fn):
            return fn
    return None


def load_archive(path: Path) -> dict[str, Any] | None:
    """The archive document, or None when the file is gone (pruned or moved)."""
    if not path.is_file():
        return None
    read = _reader()
    try:
        doc = read(path) if read is not None else json.loads(path.read_bytes())
    except Exception as e:  # any reader failure is reported, not raised through the CLI
        raise ArchiveUnreadable(f"cannot read archive {path}: {e}") from None
    if hasattr(doc, "model_dump"):
        doc = doc.model_dump(mode="json")
    elif not isinstance(doc, Mapping) and hasattr(doc, "__dict__"):
        doc = dict(vars(doc))
    if not isinstance(doc, Mapping):
        raise ArchiveUnreadable(f"archive {path} is not a JSON object")
    return dict(doc)


def turns_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Per-turn entries of an archive document, in order."""
    for holder in (doc, doc.get("metrics") or {}):
        turns = holder.get("turns") if isinstance(holder, Mapping) else None
        if isinstance(turns, list):
            return [dict(t) for t in turns if isinstance(t, Mapping)]
    messages = doc.get("messages")
    if isinstance(messages, list):
        return per_turn([m for m in messages if isinstance(m, Mapping)])
    return []
