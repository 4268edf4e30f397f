"""What the store indexes about one archived session: plain frozen data, no DB here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from archiver.claude.outcome import error_kind_of
from archiver.shape import as_num, as_obj
from detectors.findings import dominant_of

__all__ = ["SOURCE_KINDS", "SessionRecord", "record_from_doc", "source_label"]

# Which agent wrote a session (the archive's `source.kind`): a fixed set, so a metric label too.
SOURCE_KINDS = ("opencode", "claude_code")


def source_label(kind: str | None) -> str:
    """The `source` metric label of a session: one of SOURCE_KINDS, never free text (a kind no
    version writes reads as `opencode`, as documents without one do)."""
    return kind if kind in SOURCE_KINDS else "opencode"


@dataclass(frozen=True)
class SessionRecord:
    session_id: str
    root_session_id: str
    parent_session_id: str | None
    depth: int
    label: str | None
    agent: str | None
    model: str | None
    title: str | None
    directory: str | None
    opencode_version: str | None
    created_ms: float | None
    updated_ms: float | None
    archived_at: str
    duration_s: float | None
    turn_count: int
    message_count: int
    in_flight: bool
    tokens_input: int
    tokens_output: int
    tokens_reasoning: int
    tokens_cache_read: int
    tokens_cache_write: int
    cost_usd: float
    subtree_tokens: int
    subtree_cost_usd: float
    subtree_session_count: int
    verdict: str
    worst_detector: str | None
    finding_count: int
    walk_error_count: int
    error_kind: str | None
    archive_path: str
    schema_version: int
    content_hash: str
    findings: tuple[Mapping[str, Any], ...] = field(default=())
    source: str = "opencode"  # which agent wrote the session: opencode or claude_code
    # a Claude Code root: the CLI's reported cost, whether octel's differs, unpriced models
    reported_cost_usd: float | None = None
    cost_mismatch: bool = False
    unpriced_models: str | None = None


def record_from_doc(doc: Mapping[str, Any], archive_path: str, content_hash: str) -> SessionRecord:
    """The index row of an archive document in the newest layout (its searchable text is read
    from the stored document later, by the search catch-up)."""
    session = as_obj(doc.get("session"))
    tot = as_obj(doc.get("totals"))
    tokens = as_obj(tot.get("tokens"))
    sub = as_obj(doc.get("subtree"))
    stime = as_obj(session.get("time"))
    findings = tuple(as_obj(f) for f in doc.get("findings") or [])
    # the pattern named is the one the live board and `octel why` name too (`dominant_of`);
    # healthy findings name none
    worst = dominant_of(findings)
    errors = [as_obj(e) for e in doc.get("walk_errors") or []]
    own_errors = [e for e in errors if e.get("session_id") in (doc.get("session_id"), None)]
    turns = [as_obj(t) for t in doc.get("per_turn") or []]
    last_error = next((str(t["error"]) for t in reversed(turns) if t.get("error")), None)
    duration = as_num(tot.get("duration_ms"))
    turn_count = int(tot.get("turns") or len(turns))
    # Nothing ran, so nothing can be healthy: a session without a turn is "empty".
    verdict = str(worst.get("verdict")) if worst else ("healthy" if turn_count or findings else "empty")
    source = as_obj(doc.get("source"))
    check = as_obj(doc.get("cost_check"))
    results = [as_obj(r) for r in as_obj(doc.get("claude")).get("results") or []]
    if results and results[-1].get("is_error") is True:
        # a Claude Code run that ended badly says how (error_max_turns, api_error, ...)
        last_error = error_kind_of(results[-1])
    elif as_obj(doc.get("claude")).get("stop"):
        last_error = str(as_obj(doc.get("claude"))["stop"])
    return SessionRecord(
        session_id=str(doc["session_id"]),
        root_session_id=str(doc.get("root_session_id") or doc["session_id"]),
        parent_session_id=doc.get("parent_session_id"),
        depth=int(doc.get("depth") or 0),
        label=doc.get("label"),
        agent=doc.get("agent"),
        model=doc.get("model"),
        title=doc.get("title") or session.get("title"),
        directory=session.get("directory")
        or as_obj(session.get("location")).get("directory"),  # V2: location
        opencode_version=source.get("opencode_version") or source.get("claude_version"),
        created_ms=as_num(stime.get("created")) or as_num(tot.get("first_created")),
        updated_ms=as_num(stime.get("updated")) or as_num(tot.get("last_activity")),
        archived_at=str(doc.get("archived_at") or ""),
        duration_s=duration / 1000.0 if duration is not None else None,
        turn_count=turn_count,
        message_count=int(tot.get("messages") or len(doc.get("messages") or [])),
        in_flight=bool(tot.get("in_flight_turns")),
        tokens_input=int(tokens.get("input") or 0),
        tokens_output=int(tokens.get("output") or 0),
        tokens_reasoning=int(tokens.get("reasoning") or 0),
        tokens_cache_read=int(tokens.get("cache_read") or 0),
        tokens_cache_write=int(tokens.get("cache_write") or 0),
        cost_usd=float(tot.get("cost") or 0.0),
        subtree_tokens=int(sub.get("tokens_total") or 0),
        subtree_cost_usd=float(sub.get("cost") or 0.0),
        subtree_session_count=int(sub.get("sessions") or 1),
        verdict=verdict,
        worst_detector=str(worst.get("detector")) if worst else None,
        finding_count=len(findings),
        walk_error_count=len(own_errors),
        error_kind=str(own_errors[0].get("error_kind")) if own_errors else last_error,
        archive_path=archive_path,
        schema_version=int(doc.get("schema_version") or 2),
        content_hash=content_hash,
        findings=findings,
        source=str(source.get("kind") or "opencode"),
        reported_cost_usd=as_num(check.get("reported_usd")),
        cost_mismatch=bool(check.get("mismatch")),
        unpriced_models=",".join(str(m) for m in check.get("unpriced_models") or []) or None,
    )
