"""Session files in a folder given to `octel import archives`, archived as octel would have
archived them from the server: exports of either OpenCode generation (an OpenCode 2 export as
schema v4, its own shapes), `opencode run --format json` logs and event captures (1.x's as
v3, OpenCode 2's `/api/event` frames as v4 through the tower's decoder and mirror).

A file is read as `octel detect` reads it (`archiver.convert_read.parse_json_text`). The
exports of a folder are kept until every file was read, then linked into trees by their
``parentID``, so a child's export hangs under its parent's. Each document names the file it
came from (``source.path``, ``origin: file``) and is stamped with the file's modification time,
so importing the same file again updates its documents rather than adding new ones.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from archiver.convert_read import parse_json_text
from archiver.document import build_documents
from archiver.session_files import export_of, is_session_file, is_v2_frames, log_trees, trees_of
from archiver.shape import RawJson as JsonObj
from archiver.walk import SessionSnapshot, TreeSnapshot
from tower.capture_v2 import capture_trees

__all__ = ["Exports", "docs_of_trees", "file_stamp", "read_session_file"]


@dataclass
class Exports:
    """The exports read so far, by generation, and the file each session came from."""

    sessions: dict[int, list[SessionSnapshot]] = field(default_factory=dict)
    files: dict[str, tuple[Path, str]] = field(default_factory=dict)  # session -> (file, stamp)

    def trees(self) -> list[TreeSnapshot]:
        return [t for gen, snaps in sorted(self.sessions.items()) for t in trees_of(snaps, gen, "file")]


def file_stamp(path: Path) -> str:
    """The file's modification time as an archive's ``archived_at`` (stable across imports)."""
    t = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def read_session_file(plain: bytes, path: Path, exports: Exports) -> list[TreeSnapshot] | None:
    """The trees in a session file (an export is kept in ``exports`` and gives []); None when
    the bytes are no session file (an archive, or something else: the archive reader says)."""
    head = plain.lstrip()[:200]
    if head.startswith(b"{") and b'"schema_version"' in plain[:4096]:
        return None  # an archive: the cheap case first
    try:
        doc = parse_json_text(plain.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not is_session_file(doc):
        return None
    found = export_of(doc)
    if found is not None:
        snap, gen = found
        exports.sessions.setdefault(gen, []).append(snap)
        exports.files[snap.session_id] = (path, file_stamp(path))
        return []
    return capture_trees(doc) if is_v2_frames(doc) else log_trees(doc)


def docs_of_trees(trees: list[TreeSnapshot], stamp: str, path: Path | Mapping[str, Path]) -> list[JsonObj]:
    """The archive documents of ``trees`` read from ``path`` (or each session's own file):
    scored, the file named."""
    out = []
    for tree in trees:
        for doc in build_documents(tree, archived_at=stamp):
            doc["source"]["server_url"] = None  # read from a file, not from a server
            doc["source"]["path"] = str(path if isinstance(path, Path) else path[doc["session_id"]])
            out.append(doc)
    return out
