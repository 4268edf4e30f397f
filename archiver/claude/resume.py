"""Read only what a Claude Code session's files gained since the last import (pure).

An import keeps, per file, where its read stopped (the byte after the last complete line and
how many lines that was) and a fingerprint of the file (its first 4 KiB and the 4 KiB before
that point); per session, each answer's counted usage by message id. No text: the state file
holds numbers, ids and hashes. A later run whose files still start with the same bytes and are
no shorter reads each from where it stopped; the new lines are parsed, then merged into the
session's archived documents (already redacted) as ``tree.build_tree(..., prior=...)`` does, so
the tree is the one a read of the whole files builds: the same messages, the same totals, a
message whose blocks straddle the two reads counted once. A file rewritten (another
fingerprint, or shorter), a document missing, or 1.0.x sidechain lines make the tree read whole.

A path, a session id or a message id can hold a secret (a folder named after a token, a file
named by one, a hostile line), so what is kept names each file, session and message by
``state_namer``'s keyed digest of its path or id (``named_entry``), never by the text; a later
run digests the paths it finds and the ids its archived documents hold to find them again
(``tree_prior``).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from archiver.errors import WalkError
from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = [
    "FINGERPRINT_BYTES",
    "CannotResume",
    "Namer",
    "ResumeState",
    "SessionPrior",
    "TreePrior",
    "fingerprint",
    "fingerprint_at",
    "named_entry",
    "resume_entry",
    "state_namer",
    "tree_prior",
]

# how much of a file's start, and of the bytes before where its read stopped, is hashed
FINGERPRINT_BYTES = 4096
# the name kept for a path or an id: its digest, keyed so that a guessed path cannot be checked
Namer = Callable[[str], str]
_PERSON = b"octel-claude-st"  # these digests are never equal to another use of the same key


def state_namer(key: bytes) -> Namer:
    """The keyed BLAKE2b (128 bits, hex) of a text, with ``key`` (the redaction key; one
    longer than BLAKE2b takes is digested to 64 bytes first)."""
    k = key if len(key) <= 64 else hashlib.blake2b(key).digest()
    keyed = hashlib.blake2b(key=k, digest_size=16, person=_PERSON)  # copied: cheaper than keyed anew

    def name(text: str) -> str:
        h = keyed.copy()
        h.update(text.encode("utf-8", "surrogateescape"))  # a file name need not be UTF-8
        return h.hexdigest()

    return name


class ResumeState(TypedDict):
    """What an import keeps to read only what a tree's files gain: per file [session id,
    offset, lines, fingerprint], per session its counted usage by message id."""

    files: dict[str, list[str | int]]
    usage: dict[str, dict[str, list[Any]]]  # each answer's usage, as the transcript counted it


@dataclass
class SessionPrior:
    """One session as an earlier read left it: its archived (redacted) messages and record,
    its counted usage by message id, and the lines of its file read then."""

    messages: list[JsonObj]
    usage: dict[str, list[Any]]
    record: JsonObj
    lines: int


@dataclass
class TreePrior:
    """What an earlier read of a tree's files built."""

    sessions: dict[str, SessionPrior]
    skipped: Counter[str] = field(default_factory=Counter)
    unknown_types: Counter[str] = field(default_factory=Counter)
    cost_state: JsonObj | None = None
    # the line errors of the earlier reads: a malformed line stays reported
    errors: list[WalkError] = field(default_factory=list)
    # session id -> the redaction counts of its archived document (its text is not counted again)
    redaction: dict[str, dict[str, int]] = field(default_factory=dict)


class CannotResume(ValueError):
    """The files cannot continue the earlier read: the tree is read whole."""


def fingerprint(head: bytes, before: bytes) -> str:
    """The hash of a file's first bytes and of the bytes before where its read stopped."""
    h = hashlib.sha256(len(head).to_bytes(4, "big") + head)
    h.update(before)
    return h.hexdigest()[:32]


def fingerprint_at(data: bytes, offset: int) -> str:
    """``fingerprint`` of a file read up to ``offset``, from ``data``, the file's first bytes."""
    return fingerprint(
        data[: min(offset, FINGERPRINT_BYTES)], data[max(0, offset - FINGERPRINT_BYTES) : offset]
    )


def resume_entry(
    reads: Mapping[str, tuple[str, int, int, dict[str, list[Any]]]],
    bases: Mapping[str, tuple[int, int]],
    fingerprints: Mapping[str, str],
) -> ResumeState:
    """The state kept for a tree: per file [session id, offset, lines, fingerprint] (offsets
    and lines counted from the file's start: ``bases`` are where this read began), per
    session its usage by message id."""
    files: dict[str, list[str | int]] = {}
    usage: dict[str, dict[str, list[Any]]] = {}
    for name, (sid, consumed, lines, used) in reads.items():
        offset, before = bases.get(name, (0, 0))
        files[name] = [sid, offset + consumed, before + lines, fingerprints.get(name, "")]
        usage[sid] = used
    return {"files": files, "usage": usage}


def named_entry(entry: Mapping[str, Any], name: Namer) -> ResumeState:
    """``entry`` (``resume_entry``) as it is kept: each path, session and message id by its
    ``name``."""
    files = {name(n): [name(str(f[0])), *f[1:]] for n, f in as_obj(entry.get("files")).items()}
    usage = {
        name(s): {name(m): c for m, c in as_obj(u).items()} for s, u in as_obj(entry.get("usage")).items()
    }
    return {"files": files, "usage": usage}


def _cost_state(check: Mapping[str, Any]) -> JsonObj | None:
    """The transcript's last ``cost-state`` as the root's cost check set it down."""
    if check.get("reported_from") != "cost-state":
        return None
    models = {
        name: {
            "inputTokens": as_obj(m).get("input"),
            "outputTokens": as_obj(m).get("output"),
            "cacheReadInputTokens": as_obj(m).get("cache_read"),
            "cacheCreationInputTokens": as_obj(m).get("cache_write"),
            "costUSD": as_obj(m).get("cost"),
        }
        for name, m in as_obj(check.get("reported_models")).items()
    }
    return {"totalCostUSD": check.get("reported_usd"), "modelUsage": models}


def tree_prior(docs: Sequence[Mapping[str, Any]], entry: Mapping[str, Any], name: Namer) -> TreePrior:
    """The earlier read of a tree from its archived documents and its kept state (``named_entry``
    with ``name``); raises ``CannotResume`` when a session the state names has no document."""
    by_id = {str(d.get("session_id")): d for d in docs}
    named = {name(sid): sid for sid in by_id}
    lines = {str(f[0]): int(f[2]) for f in as_obj(entry.get("files")).values()}
    usage = as_obj(entry.get("usage"))
    missing = set(usage) - set(named)
    if missing or not docs:
        raise CannotResume(f"no archived document for {sorted(missing)[:3]}")
    roots = [d for d in docs if d.get("depth") == 0]
    if len(roots) != 1:
        raise CannotResume("no single root document")
    root = roots[0]
    claude = as_obj(root.get("claude"))
    prior = TreePrior(
        sessions={},
        skipped=Counter(as_obj(claude.get("skipped_lines"))),
        unknown_types=Counter(as_obj(claude.get("unknown_types"))),
        cost_state=_cost_state(as_obj(root.get("cost_check"))),
        errors=[
            WalkError(
                "malformed",
                "line",
                e.get("session_id"),
                str(e.get("message") or ""),
                str(e.get("path") or ""),
            )
            for e in map(as_obj, root.get("walk_errors") or [])
            if e.get("error_kind") == "malformed" and e.get("what") == "line"
        ],
    )
    for kept, sid in named.items():
        d = by_id[sid]
        prior.redaction[sid] = dict(as_obj(d.get("redaction")))
        if kept in usage:
            messages = [dict(m) for m in d.get("messages") or []]
            record = dict(as_obj(d.get("session")))
            # back to the ids the archived messages hold: only those are looked up when merging
            counted, ids = as_obj(usage[kept]), (str(as_obj(m.get("info")).get("id")) for m in messages)
            used = {mid: counted[k] for mid in ids if (k := name(mid)) in counted}
            prior.sessions[sid] = SessionPrior(messages, used, record, lines.get(kept, 0))
    return prior
