"""Which root trees the janitor may delete from an OpenCode server, and why not (pure: no I/O,
no clock).

A tree may go only when all of these hold, checked in this order (the first that fails is the
reason it is kept):

- ``running``: no session of it is busy, retrying or waiting on an ask on the server now;
- ``young``: its last activity (the newest ``time.updated`` of its sessions on the server) is
  at least ``older_than`` seconds before ``now``;
- ``unarchived``: the store indexes the tree at all;
- ``incomplete``: every session the server has of it is indexed under this root;
- ``invalid``: every session's archive document was read back and is valid against its schema;
- ``changed``: each archive holds as many messages as the server has now, and the server's
  session is not newer than the archive's copy of it (a tree that moved on since it was
  archived is re-archived first, or kept).

`judge` takes what is known of one tree; the I/O side fills the cheap facts first (listing,
status, index) and reads the archives and counts the server's messages only for a tree that
passed the cheap checks (`screen`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "REASONS",
    "ArchivedSession",
    "Reason",
    "ServerSession",
    "TreeFacts",
    "Verdict",
    "judge",
    "screen",
]

Reason = Literal["running", "young", "unarchived", "incomplete", "invalid", "changed"]
REASONS: tuple[Reason, ...] = ("running", "young", "unarchived", "incomplete", "invalid", "changed")


@dataclass(frozen=True)
class ServerSession:
    """One session of the tree as the server has it now."""

    session_id: str
    updated_ms: int | None  # time.updated (ms since the epoch); None when the server gave none
    messages: int | None = None  # None: not counted (yet)


@dataclass(frozen=True)
class ArchivedSession:
    """One session's archive document as read back from the store."""

    session_id: str
    problem: str | None  # why it does not read back valid; None when it does
    messages: int = 0
    parts: int = 0
    updated_ms: int | None = None  # the archived session record's time.updated
    bytes: int = 0  # as stored


@dataclass(frozen=True)
class TreeFacts:
    root_id: str
    sessions: tuple[ServerSession, ...]
    live: Mapping[str, str] = field(default_factory=dict)  # session id -> busy/retry/ask
    indexed: frozenset[str] = frozenset()  # session ids the index holds under this root
    archived: Mapping[str, ArchivedSession] | None = None  # None: not read back (yet)

    @property
    def last_activity_ms(self) -> int | None:
        times = [s.updated_ms for s in self.sessions]
        if not times or any(t is None for t in times):
            return None
        return max(t for t in times if t is not None)


@dataclass(frozen=True)
class Verdict:
    root_id: str
    delete: bool
    reason: Reason | None  # None when it may be deleted
    detail: str  # one sentence for the report and the audit row


def _keep(facts: TreeFacts, reason: Reason, detail: str) -> Verdict:
    return Verdict(facts.root_id, False, reason, detail)


def screen(facts: TreeFacts, now_ms: int, older_than_ms: int) -> Verdict | None:
    """The cheap checks (running, young, unarchived, incomplete): a verdict to keep the tree,
    or None when it is worth reading its archives."""
    busy = sorted(s.session_id for s in facts.sessions if s.session_id in facts.live)
    if busy:
        states = ", ".join(f"{sid} {facts.live[sid]}" for sid in busy[:3])
        return _keep(facts, "running", f"running on the server ({states})")
    last = facts.last_activity_ms
    if last is None:
        return _keep(facts, "young", "the server gives no last-activity time for every session")
    idle_ms = now_ms - last
    if idle_ms < older_than_ms:
        return _keep(
            facts, "young", f"last active {idle_ms / 1000:.0f} s ago, under {older_than_ms / 1000:.0f} s"
        )
    if not facts.indexed:
        return _keep(facts, "unarchived", "no archive of the tree in the store")
    missing = sorted(s.session_id for s in facts.sessions if s.session_id not in facts.indexed)
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return _keep(
            facts, "incomplete", f"{len(missing)} session(s) not archived: {', '.join(missing[:3])}{more}"
        )
    return None


def judge(facts: TreeFacts, now_ms: int, older_than_ms: int) -> Verdict:
    """Delete or keep the tree, with the reason; keeps it whenever a fact is missing."""
    early = screen(facts, now_ms, older_than_ms)
    if early is not None:
        return early
    if facts.archived is None:
        return _keep(facts, "invalid", "the archive was not read back")
    for s in facts.sessions:
        doc = facts.archived.get(s.session_id)
        if doc is None:
            return _keep(facts, "invalid", f"the archive of {s.session_id} could not be read back")
        if doc.problem is not None:
            return _keep(facts, "invalid", f"the archive of {s.session_id} is not valid: {doc.problem}")
    for s in facts.sessions:
        doc = facts.archived[s.session_id]
        if s.messages is None:
            return _keep(facts, "changed", f"the server's messages of {s.session_id} were not counted")
        if s.messages != doc.messages:
            return _keep(
                facts,
                "changed",
                f"{s.session_id} has {s.messages} messages on the server, {doc.messages} archived",
            )
        if s.updated_ms is not None and (doc.updated_ms is None or s.updated_ms > doc.updated_ms):
            return _keep(facts, "changed", f"{s.session_id} was updated on the server after it was archived")
    n = len(facts.sessions)
    return Verdict(facts.root_id, True, None, f"archived and verified: {n} session(s), idle, old enough")
