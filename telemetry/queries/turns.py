"""A session's archive document, found and read through the archive store, and the per-turn
entries in it.

Every reader (the CLI, the web API, `octel why`, `octel detect`, the trace export, pruning)
names a document by its index row's `archive_path` and reads it through an
`archiver.store.ArchiveStore` (the folder or the database): none opens a path itself. In the
folder, `archive_location` is the one containment rule. `read_doc` reads every archive version
(plain, gzip or compressed in the database) and upgrades it to the newest layout.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from archiver.files import parse_archive
from archiver.metrics import per_turn
from archiver.shape import RawJson
from archiver.store import ArchiveMissing, ArchiveStore, as_store, locate

__all__ = ["ArchiveRead", "DocReader", "archive_location", "open_archive", "read_doc", "turns_of"]

# an archive document as read from its file (or why it could not be), its reader
ArchiveRead = tuple[RawJson | None, str | None]
DocReader = Callable[[ArchiveStore, str], RawJson]


def archive_location(archive_dir: Path, archive_path: str) -> Path | None:
    """Where an index row's archive lies in the archive folder, or None when the path leaves
    it (`archiver.store.locate`: resolved, symlinks followed, absolute or not)."""
    return locate(archive_dir, archive_path)


def read_doc(store: ArchiveStore, name: str) -> RawJson:
    """The document named ``name`` in the newest layout, whatever version wrote it."""
    return parse_archive(store.read(name), name)


def open_archive(store: ArchiveStore | Path, archive_path: str, read: DocReader = read_doc) -> ArchiveRead:
    """(document, None), or (None, why it cannot be read): outside the folder, gone, unreadable."""
    try:
        return read(as_store(store), archive_path), None
    except ArchiveMissing as e:
        return None, str(e)
    except (OSError, ValueError, EOFError) as e:  # orjson.JSONDecodeError is a ValueError
        return None, f"cannot read archive {archive_path}: {e}"


def turns_of(doc: Mapping[str, object]) -> list[RawJson]:
    """Per-turn entries of an archive document, in order (computed when the document has none)."""
    for key in ("per_turn", "turns"):
        turns = doc.get(key)
        if isinstance(turns, list):
            return [dict(t) for t in turns if isinstance(t, Mapping)]
    messages = doc.get("messages")
    if isinstance(messages, list):
        return per_turn([m for m in messages if isinstance(m, Mapping)])
    return []
