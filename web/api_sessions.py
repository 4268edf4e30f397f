"""`/api/sessions…`: the JSON twin of the Sessions view and of one session's page.

Lists, filters and paging run in the database through `telemetry.queries.sessions`; the
per-turn table and the message timeline come from the session's archive file.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from sqlmodel import select

from telemetry.queries.paging import CursorError
from telemetry.queries.sessions import MAX_LIMIT, SessionFilter, get_session, list_sessions
from telemetry.store.models import SessionIndex
from telemetry.timeutil import parse_since, utcnow
from web.api_archived import archive_cache, archive_location
from web.deps import ReadDbDep, SettingsDep
from web.errors import ApiError

__all__ = ["MESSAGE_PAGE_MAX", "message_view", "router", "turn_view"]

MESSAGE_PAGE_MAX = 200
router = APIRouter(prefix="/api/sessions", tags=["sessions"])


def _invalid(field: str, message: str) -> ApiError:
    return ApiError(422, "invalid_request", f"{field}: {message}", [{"field": field, "message": message}])


def _time(name: str, value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return parse_since(value, utcnow())
    except ValueError as e:
        raise _invalid(f"query.{name}", str(e)) from None


def _blank(v: str | None) -> str | None:
    return v.strip() or None if v is not None else None


@router.get("")
def sessions(
    db: ReadDbDep,
    agent: str | None = None,
    model: str | None = None,
    verdict: Annotated[str | None, Query(pattern="^(healthy|suspect|stuck)?$")] = None,
    label: str | None = None,
    source: Annotated[
        str | None, Query(pattern="^(opencode|claude_code)?$", description="opencode or claude_code")
    ] = None,
    since: Annotated[str | None, Query(description="24h, 7d or an ISO time")] = None,
    until: Annotated[str | None, Query(description="24h, 7d or an ISO time")] = None,
    q: Annotated[str | None, Query(max_length=200, description="text in the title or label")] = None,
    root_only: bool = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    """Archived sessions, newest first, filtered and keyset-paged in the database."""
    f = SessionFilter(
        agent=_blank(agent),
        model=_blank(model),
        verdict=_blank(verdict),
        label=_blank(label),
        since=_time("since", since),
        until=_time("until", until),
        q=_blank(q),
        root_only=root_only,
        limit=limit,
        cursor=_blank(cursor),
        source=_blank(source),
    )
    try:
        return list_sessions(db, f)
    except CursorError as e:
        raise _invalid("query.cursor", str(e)) from None


def _not_found(session_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no archived session {session_id!r}")


def _iso_ms(v: object) -> str | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return datetime.fromtimestamp(v / 1000, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _d(v: object) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def turn_view(t: Mapping[str, Any]) -> dict[str, Any]:
    """One per-turn entry of an archive, with ISO times and flat token columns."""
    tokens = _d(t.get("tokens"))
    ms = t.get("duration_ms")
    return {
        "index": t.get("index", 0),
        "message_id": t.get("message_id"),
        "agent": t.get("agent"),
        "model": t.get("model"),
        "created_at": _iso_ms(t.get("created")),
        "completed_at": _iso_ms(t.get("completed")),
        "duration_s": ms / 1000 if isinstance(ms, int | float) else None,
        "in_flight": bool(t.get("in_flight")),
        "tokens_input": tokens.get("input", 0),
        "tokens_output": tokens.get("output", 0),
        "tokens_reasoning": tokens.get("reasoning", 0),
        "tokens_cache_read": tokens.get("cache_read", 0),
        "tokens_cache_write": tokens.get("cache_write", 0),
        "cost_usd": t.get("cost", 0.0),
        "tool_calls": t.get("tool_calls", 0),
        "tool_errors": t.get("tool_errors", 0),
        "finish": t.get("finish"),
        "error": t.get("error_message") or t.get("error"),
    }


def message_view(index: int, m: Mapping[str, Any]) -> dict[str, Any]:
    """One archived message for the timeline: a summary of its info and its parts as stored."""
    info = _d(m.get("info"))
    if not info and "parts" not in m:  # a message in another layout: show it as one raw part
        return {"index": index, "id": m.get("id"), "role": m.get("role") or m.get("type"),
                "parts": [{"type": "raw", "value": dict(m)}]}  # fmt: skip
    t = _d(info.get("time"))
    created, completed = t.get("created"), t.get("completed")
    assistant = info.get("role") == "assistant"
    tokens = _d(info.get("tokens"))
    cache = _d(tokens.get("cache"))
    err = _d(info.get("error"))
    err_text = None
    if err:
        err_text = str(err.get("name") or "error")
        detail = _d(err.get("data")).get("message")
        if detail:
            err_text += f": {detail}"
    duration = None
    if isinstance(created, int | float) and isinstance(completed, int | float):
        duration = (completed - created) / 1000
    return {
        "index": index,
        "id": info.get("id"),
        "role": info.get("role"),
        "agent": info.get("agent") or info.get("mode"),
        "created_at": _iso_ms(created),
        "completed_at": _iso_ms(completed),
        "duration_s": duration,
        "in_flight": assistant and completed is None,
        "tokens": {
            "input": tokens.get("input", 0),
            "output": tokens.get("output", 0),
            "reasoning": tokens.get("reasoning", 0),
            "cache_read": cache.get("read", 0),
            "cache_write": cache.get("write", 0),
        }
        if assistant
        else None,
        "cost_usd": info.get("cost") if assistant else None,
        "finish": info.get("finish"),
        "error": err_text,
        "parts": [p for p in _l(m.get("parts")) if isinstance(p, Mapping)],
    }


def _archive(request: Request, settings: Any, archive_path: str) -> tuple[dict[str, Any] | None, str | None]:
    """(document, None) or (None, why it could not be read)."""
    path = archive_location(settings.archives, archive_path)
    if path is None or not path.is_file():
        return None, f"{archive_path} is not in the archive folder (pruned or moved?)"
    try:
        return archive_cache(request).read(path), None
    except (OSError, ValueError, EOFError) as e:
        return None, f"{archive_path}: {e}"


@router.get("/{session_id}")
def session(session_id: str, request: Request, db: ReadDbDep, settings: SettingsDep) -> dict[str, Any]:
    """One session: its record, findings, subtree (nested, rolled up) and per-turn metrics."""
    data = get_session(db, session_id)
    if data is None:
        raise _not_found(session_id)
    doc, error = _archive(request, settings, data["session"]["archive_path"])
    turns = doc.get("per_turn") if doc is not None else None
    data["per_turn"] = (
        [turn_view(t) for t in turns if isinstance(t, Mapping)] if isinstance(turns, list) else None
    )
    data["archive"] = {
        "file": data["session"]["archive_path"],
        "available": doc is not None,
        "error": error,
        # what the walk could not fetch, and what redaction replaced, by rule
        "walk_errors": _l(doc.get("walk_errors")) if doc is not None else [],
        "redaction": _d(doc.get("redaction")) if doc is not None else {},
    }
    return data


def _position(messages: list[Any], at: str) -> int | None:
    """Index of the message whose id, or one of whose parts' ids or call ids, is `at`."""
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        if _d(m.get("info")).get("id") == at or m.get("id") == at:
            return i
        for p in _l(m.get("parts")):
            if isinstance(p, Mapping) and at in (p.get("id"), p.get("callID")):
                return i
    return None


@router.get("/{session_id}/messages")
def messages(
    session_id: str,
    request: Request,
    db: ReadDbDep,
    settings: SettingsDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MESSAGE_PAGE_MAX)] = 50,
    at: Annotated[str | None, Query(max_length=300, description="a message or part id to page to")] = None,
) -> dict[str, Any]:
    """A page of the session's messages from its archive file, oldest first."""
    path = db.exec(select(SessionIndex.archive_path).where(SessionIndex.session_id == session_id)).first()
    if path is None:
        raise _not_found(session_id)
    doc, error = _archive(request, settings, path)
    if doc is None:
        raise ApiError(404, "archive_missing", f"the archive of {session_id!r} cannot be read: {error}")
    msgs = doc.get("messages")
    msgs = msgs if isinstance(msgs, list) else []
    if at:
        pos = _position(msgs, at)
        if pos is None:
            raise _invalid("query.at", f"no message or part {at!r} in this session")
        offset = pos - pos % limit
    page = msgs[offset : offset + limit]
    return {
        "session_id": session_id,
        "total": len(msgs),
        "offset": offset,
        "limit": limit,
        "prev_offset": max(0, offset - limit) if offset > 0 else None,
        "next_offset": offset + limit if offset + limit < len(msgs) else None,
        "items": [message_view(offset + i, m) for i, m in enumerate(page) if isinstance(m, Mapping)],
        "redaction": doc.get("redaction") or {},
    }
