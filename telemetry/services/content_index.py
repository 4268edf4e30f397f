"""Keep the content index (`search_part`) in step with the session index.

Each writer of `session_index` (one tree, a batch, an import, a repair) calls `replace_parts`
with the records it indexed, in its own transaction: the session's parts are deleted and its
new ones written, so archiving a session again never doubles a hit and a crash leaves the old
parts or the new. The parts come from the redacted archive document (`archiver.content`, read
when the record was built from it); a record built without one (none today) leaves the
session's parts as they are. `remove_parts` goes with the index rows when sessions are pruned.

Cheap by construction: two statements per batch of sessions (a delete by session id, which
the session index of `search_part` answers, and one multi-row insert); the text index is kept
by the engine (SQLite's triggers, PostgreSQL's GIN index).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, insert
from sqlmodel import Session, col

from archiver.content import ContentPart
from archiver.record import SessionRecord
from telemetry.store.search_models import SearchPart

__all__ = ["part_rows", "put_parts", "remove_parts", "replace_parts"]

_T = SearchPart.__table__  # type: ignore[attr-defined]
_CHUNK = 500  # session ids per statement: under every engine's parameter limit


def _at(ms: float | None) -> datetime | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000.0, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def part_rows(session_id: str, parts: Iterable[ContentPart]) -> list[dict[str, Any]]:
    """The `search_part` rows of one session's parts."""
    return [
        {
            "session_id": session_id,
            "message_index": p.message_index,
            "part_index": p.part_index,
            "kind": p.kind,
            "tool": (p.tool or "")[:200] or None,
            "at": _at(p.created_ms),
            "body": p.body,
        }
        for p in parts
    ]


def remove_parts(db: Session, session_ids: Iterable[str]) -> None:
    ids = sorted(set(session_ids))
    for i in range(0, len(ids), _CHUNK):
        db.exec(delete(SearchPart).where(col(SearchPart.session_id).in_(ids[i : i + _CHUNK])))


def put_parts(db: Session, parts: Mapping[str, Sequence[ContentPart]]) -> int:
    """Replace the parts of each session named with those given; returns the rows written."""
    if not parts:
        return 0
    remove_parts(db, parts)
    rows = [row for sid, mine in parts.items() for row in part_rows(sid, mine)]
    if rows:
        db.connection().execute(insert(_T), rows)
    return len(rows)


def replace_parts(db: Session, records: Sequence[SessionRecord]) -> int:
    """Replace the parts of every session a record names that carries its document's parts
    (the last record of a session wins, as in the index); returns the rows written."""
    return put_parts(db, {r.session_id: r.parts for r in records if r.parts})
