"""One builder of session index records (what an archive yields to the indexer) for the tests
that index records without archiving a tree: a test names only the fields it is about."""

from __future__ import annotations

from typing import Any

from archiver.record import SessionRecord

__all__ = ["session_record"]


def session_record(session_id: str = "s1", **fields: Any) -> SessionRecord:
    """A healthy root session of one turn with no usage and no findings, stored as
    `<session_id>.json`; each keyword replaces that field."""
    base: dict[str, Any] = {
        "session_id": session_id,
        "root_session_id": session_id,
        "parent_session_id": None,
        "depth": 0,
        "label": None,
        "agent": "build",
        "model": "m",
        "title": "t",
        "directory": None,
        "opencode_version": None,
        "created_ms": None,
        "updated_ms": None,
        "archived_at": "2026-11-30T00:00:00+00:00",
        "duration_s": None,
        "turn_count": 1,
        "message_count": 2,
        "in_flight": False,
        "tokens_input": 0,
        "tokens_output": 0,
        "tokens_reasoning": 0,
        "tokens_cache_read": 0,
        "tokens_cache_write": 0,
        "cost_usd": 0.0,
        "subtree_tokens": 0,
        "subtree_cost_usd": 0.0,
        "subtree_session_count": 1,
        "verdict": "healthy",
        "worst_detector": None,
        "finding_count": 0,
        "walk_error_count": 0,
        "error_kind": None,
        "archive_path": f"{session_id}.json",
        "schema_version": 3,
        "content_hash": "sha256:x",
    }
    return SessionRecord(**{**base, **fields})
