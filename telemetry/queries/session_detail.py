"""One session as the CLI (`octel sessions show`) and the web (`/api/sessions/{id}`) both show it.

The record, findings and subtree come from the store; the per-turn rows, what the walk could not
fetch and what redaction replaced come from the archive document, read through the archive
store (`telemetry.queries.turns.open_archive`). The web passes its cache as `read`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlmodel import Session

from archiver.shape import as_obj, text_or_none
from archiver.store import ArchiveStore
from telemetry.queries.finding_text import describe_all
from telemetry.queries.models import SessionDetail, TurnRow
from telemetry.queries.sessions import get_session
from telemetry.queries.turns import DocReader, open_archive, read_doc, turns_of
from telemetry.store.archive_docs import reading_in

__all__ = ["iso_ms", "session_detail", "turn_view"]


def iso_ms(v: object) -> str | None:
    """Epoch milliseconds (as OpenCode writes times) as ISO 8601 UTC; None for anything else."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return datetime.fromtimestamp(v / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _n(v: object, default: float = 0) -> Any:
    return v if isinstance(v, int | float) and not isinstance(v, bool) else default


def turn_view(t: Mapping[str, Any]) -> TurnRow:
    """One per-turn entry of an archive, with ISO times and flat token columns."""
    tokens = as_obj(t.get("tokens"))
    ms = t.get("duration_ms")
    error = t.get("error_message") or t.get("error")
    return TurnRow(
        index=_n(t.get("index")),
        message_id=text_or_none(t.get("message_id")),
        agent=text_or_none(t.get("agent")),
        model=text_or_none(t.get("model")),
        created_at=iso_ms(t.get("created")),
        completed_at=iso_ms(t.get("completed")),
        duration_s=ms / 1000 if isinstance(ms, int | float) and not isinstance(ms, bool) else None,
        in_flight=bool(t.get("in_flight")),
        tokens_input=_n(tokens.get("input")),
        tokens_output=_n(tokens.get("output")),
        tokens_reasoning=_n(tokens.get("reasoning")),
        tokens_cache_read=_n(tokens.get("cache_read")),
        tokens_cache_write=_n(tokens.get("cache_write")),
        cost_usd=_n(t.get("cost"), 0.0),
        tool_calls=_n(t.get("tool_calls")),
        tool_errors=_n(t.get("tool_errors")),
        finish=text_or_none(t.get("finish")),
        error=str(error) if error else None,
    )


def session_detail(
    db: Session,
    session_id: str,
    store: ArchiveStore | Path,
    read: DocReader = read_doc,
) -> SessionDetail | None:
    """The session's record, findings, subtree, per-turn rows and archive state; None if unknown."""
    got = get_session(db, session_id)
    if got is None:
        return None
    path = got.session.archive_path
    doc, error = open_archive(reading_in(store, db), path, read)
    walk_errors = doc.get("walk_errors") if doc is not None else None
    redaction = doc.get("redaction") if doc is not None else None
    msgs = doc.get("messages") if doc is not None else None
    return SessionDetail.model_validate(
        {
            "session": got.session,
            "cycle": got.cycle,
            "parent_session_id": got.parent_session_id,
            "root_session_id": got.root_session_id,
            "tree": got.tree,
            "findings": describe_all(
                [f.model_dump() for f in got.findings], msgs if isinstance(msgs, list) else None
            ),
            "per_turn": [turn_view(t) for t in turns_of(doc)] if doc is not None else None,
            "archive": {
                "file": path,
                "available": doc is not None,
                "error": error,
                "walk_errors": [e for e in walk_errors if isinstance(e, Mapping)]
                if isinstance(walk_errors, list)
                else [],
                "redaction": dict(redaction) if isinstance(redaction, Mapping) else {},
            },
        }
    )
