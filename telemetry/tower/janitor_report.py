"""What one janitor pass did (`octel janitor --json` prints this model) and its audit rows.

Each tree the janitor considered is one ``JanitorTree``: deleted, would be deleted (a dry run),
kept with its reason, or failed. Every deletion, and every tree kept, is a ``watch_action`` row
(rule ``delete_archived_after``, action ``delete``; outcome ``done``, ``skipped``, ``gone`` or
``failed``), redacted like every audit row, and counted in ``octel_actions_total``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field
from sqlmodel import Session

from archiver.cut import cut
from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.aggregates import bump

__all__ = ["RULE", "JanitorReport", "JanitorTree", "record_tree"]

RULE = "delete_archived_after"
Fate = Literal["deleted", "would_delete", "kept", "gone", "failed"]
_OUTCOME = {"deleted": "done", "kept": "skipped", "gone": "gone", "failed": "failed"}


class JanitorTree(BaseModel):
    root_session_id: str
    fate: Fate
    reason: str | None = None  # running, young, unarchived, incomplete, invalid, changed, …
    detail: str
    sessions: int = 0
    messages: int = 0
    parts: int = 0
    archive_bytes: int = 0  # bytes of the archive documents that hold the tree
    last_activity: datetime | None = None


class JanitorReport(BaseModel):
    server: str
    dry_run: bool
    older_than_s: float
    at: datetime
    trees: list[JanitorTree] = Field(default_factory=list)
    trees_deleted: int = 0
    sessions_deleted: int = 0
    messages_deleted: int = 0
    parts_deleted: int = 0
    archive_bytes: int = 0  # of the trees deleted (or, in a dry run, that would be)
    kept: dict[str, int] = Field(default_factory=dict)  # reason -> trees

    def add(self, tree: JanitorTree) -> None:
        self.trees.append(tree)
        if tree.fate in ("deleted", "would_delete", "gone"):
            self.trees_deleted += 1
            self.sessions_deleted += tree.sessions
            self.messages_deleted += tree.messages
            self.parts_deleted += tree.parts
            self.archive_bytes += tree.archive_bytes
        else:
            key = tree.reason or tree.fate
            self.kept[key] = self.kept.get(key, 0) + 1


def record_tree(
    db: Session, server: str, tree: JanitorTree, *, redactor: Redactor, at: float, watcher: str | None = None
) -> WatchAction | None:
    """The audit row of one tree (None for a dry run's ``would_delete``: nothing was done)."""
    outcome = _OUTCOME.get(tree.fate)
    if outcome is None:
        return None
    evidence = {
        "reason": tree.reason,
        "sessions": tree.sessions,
        "messages": tree.messages,
        "parts": tree.parts,
        "archive_bytes": tree.archive_bytes,
        "last_activity": tree.last_activity.isoformat() if tree.last_activity else None,
    }
    row = WatchAction(
        at=datetime.fromtimestamp(at, UTC),
        server=redactor.cut(server, 500),
        session_id=tree.root_session_id[:200],
        root_session_id=tree.root_session_id[:200],
        rule=RULE,
        action="delete",
        outcome=outcome,
        detail=cut(redactor.cut(tree.detail, 1000), 1000),
        evidence=evidence,
        watcher=redactor.cut(watcher, 200) if watcher else None,
    )
    db.add(row)
    bump(db, "actions_total", {"rule": RULE, "outcome": outcome}, 1)
    return row
