"""Archive a Claude Code session tree: build documents, redact, write; never raises.

The same writer as OpenCode trees (``archiver.archive.write_documents``): one file per session,
atomic, redacted by the one redactor, an index record for each.
"""

from __future__ import annotations

from pathlib import Path

from archiver.archive import ArchiveResult, now_iso, write_documents
from archiver.batch import Prepared, prepare
from archiver.claude.document import build_claude_documents
from archiver.claude.tree import ClaudeTree
from archiver.redact import Redactor

__all__ = ["archive_claude_tree", "prepare_claude_tree"]


def archive_claude_tree(
    tree: ClaudeTree,
    archive_dir: Path,
    redactor: Redactor,
    *,
    label: str | None = None,
    compress: bool = False,
) -> ArchiveResult:
    """Write one archive file per session of ``tree`` into ``archive_dir``."""
    archived_at = now_iso()
    result = ArchiveResult(tree.root_id, archived_at)
    try:
        result.sessions_found = len(tree.sessions)
        result.messages = sum(len(s.messages) for s in tree.sessions)
        # what was read past (a cut last line, a missing meta file) is reported, not fatal
        result.walk_errors = [e.to_dict() for e in tree.errors]
        docs = build_claude_documents(tree, archived_at=archived_at, label=label)
        write_documents(docs, archive_dir, redactor, result, compress=compress)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
    return result


def prepare_claude_tree(
    tree: ClaudeTree, redactor: Redactor, *, label: str | None = None, compress: bool = False
) -> Prepared:
    """The tree's documents built, serialised and redacted, ready for ``archiver.batch.write_batch``
    (the bulk path of an import: no I/O here); never raises."""
    archived_at = now_iso()
    result = ArchiveResult(tree.root_id, archived_at)
    try:
        result.sessions_found = len(tree.sessions)
        result.messages = sum(len(s.messages) for s in tree.sessions)
        result.walk_errors = [e.to_dict() for e in tree.errors]
        docs = build_claude_documents(tree, archived_at=archived_at, label=label)
        return prepare(docs, redactor, result, compress=compress)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
        return Prepared(result)
