"""Archive layouts: every version octel ever wrote is read and brought to the newest.

Two layouts are current: v3 (OpenCode 1.x and Claude Code sessions) and v4 (OpenCode 2
sessions, in OpenCode 2's own shapes); v1 and v2 are brought to v3."""

from __future__ import annotations

from archiver.metrics import per_turn, totals
from archiver.shape import RawJson

__all__ = ["opencode_generation", "upgrade"]


def opencode_generation(source: str | None, schema_version: int, version: str | None = None) -> int | None:
    """The OpenCode API generation an archive came from: v4 holds OpenCode 2's own shapes; a v3
    tree rescued from the watcher's mirror of a 2.x server is 1.x-shaped, so its server's
    version tells; None for Claude Code."""
    if source not in (None, "opencode"):
        return None
    head = (version or "").split(".", 1)[0]
    return 2 if schema_version >= 4 or (head.isdigit() and int(head) >= 2) else 1


def upgrade(doc: RawJson) -> RawJson:
    """Bring an older layout to v3 (a v4 document is current as it is). v2 lacks
    ``source.kind`` (always OpenCode), ``claude`` and ``cost_check``; v1 holds one session's
    messages with ``per_turn`` and ``state_history``, no tree fields."""
    version = doc.get("schema_version", doc.get("version", 1))
    if version in (3, 4):
        return doc
    if version == 2:
        return _v2_to_v3(doc)
    if version != 1:
        raise ValueError(f"unknown archive schema version {version!r}")
    return _v2_to_v3(_v1_to_v2(doc))


def _v2_to_v3(doc: RawJson) -> RawJson:
    source = doc.get("source")
    return {
        **doc,
        "schema_version": 3,
        "upgraded_from": doc.get("upgraded_from", 2),
        "source": {**(source if isinstance(source, dict) else {}), "kind": "opencode"},
        "claude": None,
        "cost_check": None,
    }


def _v1_to_v2(doc: RawJson) -> RawJson:
    messages = doc.get("messages")
    if not isinstance(messages, list):
        # a Claude CLI result or any other JSON file: no version and no messages
        raise ValueError("not an archive: no schema_version and no message list")
    raw_session = doc.get("session")
    session: RawJson = raw_session if isinstance(raw_session, dict) else {}
    sid = doc.get("session_id") or session.get("id")
    if not sid:
        infos = [m.get("info", {}) for m in messages if isinstance(m, dict)]
        sid = next((i.get("sessionID") for i in infos if i.get("sessionID")), None)
    if not sid:
        raise ValueError("v1 archive without a session id")
    # v1 per_turn entries held fewer fields: recompute them from the messages
    fresh = per_turn(messages)
    own = totals(messages, fresh)
    title = doc.get("title") or session.get("title")
    return {
        "schema_version": 2,
        "upgraded_from": 1,
        "archived_at": doc.get("archived_at"),
        "archiver_version": doc.get("archiver_version"),
        "source": {
            "server_url": doc.get("server_url"),
            "opencode_version": doc.get("opencode_version") or session.get("version"),
            "messages_route": "classic",
        },
        "label": doc.get("label"),
        "session_id": sid,
        "root_session_id": sid,
        "parent_session_id": None,
        "depth": 0,
        "agent": doc.get("agent") or session.get("agent"),
        "subagent_title": None,
        "title": title,
        "model": doc.get("model"),
        "session": {**session, "id": sid, "title": title},
        "messages": messages,
        "diff": None,
        "todo": None,
        "per_turn": fresh,
        "totals": own,
        "subtree": {
            "sessions": 1,
            "turns": own["turns"],
            "tool_calls": own["tool_calls"],
            "tokens": dict(own["tokens"]),
            "cost": own["cost"],
            "tokens_total": own["tokens_total"],
        },
        "status_history": doc.get("state_history") or [],
        "permission_events": [],
        "walk_errors": [],
        "findings": doc.get("findings") or [],
        "verdict": doc.get("verdict") or "healthy",
        "redaction": doc.get("redaction") or {},
    }
