"""Prepare a Claude Code session tree for the archive: build documents, serialise, redact.

``archiver.batch.write_batch`` then writes them like OpenCode trees' files: one file per
session, atomic, read back and validated, an index record for each from the redacted text.
"""

from __future__ import annotations

from archiver.archive import ArchiveResult, now_iso
from archiver.batch import Prepared, prepare
from archiver.claude.document import build_claude_documents
from archiver.claude.tree import ClaudeTree
from archiver.errors import WalkError
from archiver.redact import Redactor

__all__ = ["is_empty", "prepare_claude_tree"]


def _main_name(tree: ClaudeTree) -> str:
    return next(iter(tree.reads), "")


def is_empty(result: ArchiveResult) -> bool:
    """Whether ``prepare_claude_tree`` left the tree out for holding no conversation."""
    return not result.records and any(e.get("error_kind") == "empty" for e in result.walk_errors)


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
        if not result.messages and not tree.workflow_runs:
            if not any(e.what == "file" or e.error_kind == "too_large" for e in tree.errors):
                # malformed lines or bookkeeping only: reported and skipped, not an empty archive
                why = "no conversation in it (no user, assistant or system line): not archived"
                empty = WalkError("empty", "file", tree.root_id, why, _main_name(tree))
                result.walk_errors.append(empty.to_dict())
            return Prepared(result)  # a file that could not be read: tried again next time
        docs = build_claude_documents(tree, archived_at=archived_at, label=label, redactor=redactor)
        return prepare(docs, redactor, result, compress=compress, before=tree.redacted_before)
    except Exception as exc:  # the archiver never breaks its caller
        result.write_errors.append(f"{type(exc).__name__}: {exc}")
        return Prepared(result)
