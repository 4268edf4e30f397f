"""Archive a Claude Code session tree: build documents, redact, write; never raises.

The same writer as OpenCode trees (``archiver.archive.write_documents``): one document per session,
atomic, redacted by the one redactor, an index record for each.
"""

from __future__ import annotations

from pathlib import Path

from archiver.archive import ArchiveResult, now_iso, write_documents
from archiver.claude.document import build_claude_documents
from archiver.claude.tree import ClaudeTree
from archiver.redact import Redactor
from archiver.store import ArchiveStore

__all__ = ["archive_claude_tree"]


def archive_claude_tree(
    tree: ClaudeTree,
    store: ArchiveStore | Path,
    redactor: Redactor,
    *,
    label: str | None = None,
    compress: bool = False,
) -> ArchiveResult:
    """Write one archive document per session of ``tree`` into ``store`` (a folder or the
    database; a path is a folder)."""
    archived_at = now_iso()
    result = ArchiveResult(tree.root_id, archived_at)
    try:
        result.sessions_found = len(tree.sessions)
        result.messages = sum(len(s.messages) for s in tree.sessions)
        # what was read past (a cut last line, a missing meta file) is reported, not fatal
        result.walk_errors = [e.to_dict() for e in tree.errors]
        docs = build_claude_documents(tree, archived_at=archived_at, label=label)
        write_documents(docs, store, redactor, result, compress=compress)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
    return result
