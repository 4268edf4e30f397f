"""`/api/sessions…`: the JSON twin of the Sessions view and of one session's page.

Thin routes over `telemetry.queries`: the list, filters and paging run in the database; one
session's detail is the same query `octel sessions show` prints; the timeline pages through the
archive file, read through the app's archive cache.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from telemetry.otel_export.links import trace_ref
from telemetry.queries.models import MessagePage, SessionDetail, SessionPage
from telemetry.queries.paging import CursorError
from telemetry.queries.session_detail import session_detail
from telemetry.queries.sessions import (
    MAX_LIMIT,
    SESSION_VERDICTS,
    SessionFilter,
    archive_path_of,
    list_sessions,
)
from telemetry.queries.timeline import message_page, message_position
from telemetry.queries.turns import open_archive
from telemetry.timeutil import Since
from web.api_archived import archive_cache, archive_store_of
from web.deps import ReadDbDep, SettingsDep
from web.errors import ApiError, invalid_request

__all__ = ["MESSAGE_PAGE_MAX", "router"]

MESSAGE_PAGE_MAX = 200
router = APIRouter(prefix="/api/sessions", tags=["sessions"])
_VERDICT = f"^({'|'.join(SESSION_VERDICTS)})?$"  # blank: any verdict


def _blank(v: str | None) -> str | None:
    return v.strip() or None if v is not None else None


@router.get("", response_model=SessionPage)
def sessions(
    db: ReadDbDep,
    agent: str | None = None,
    model: str | None = None,
    verdict: Annotated[
        str | None, Query(pattern=_VERDICT, description="healthy, suspect, stuck or empty")
    ] = None,
    label: str | None = None,
    source: Annotated[
        str | None, Query(pattern="^(opencode|claude_code)?$", description="opencode or claude_code")
    ] = None,
    since: Since = None,
    until: Since = None,
    q: Annotated[str | None, Query(max_length=200, description="text in the title or label")] = None,
    root_only: bool = False,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: str | None = None,
) -> SessionPage:
    """Archived sessions, newest first, filtered and keyset-paged in the database."""
    f = SessionFilter(
        agent=_blank(agent),
        model=_blank(model),
        verdict=_blank(verdict),
        label=_blank(label),
        since=since,
        until=until,
        q=_blank(q),
        root_only=root_only,
        limit=limit,
        cursor=_blank(cursor),
        source=_blank(source),
    )
    try:
        return list_sessions(db, f)
    except CursorError as e:
        raise invalid_request("query.cursor", str(e)) from None


def _not_found(session_id: str) -> ApiError:
    return ApiError(404, "not_found", f"no archived session {session_id!r}")


@router.get("/{session_id}", response_model=SessionDetail)
def session(session_id: str, request: Request, db: ReadDbDep, settings: SettingsDep) -> SessionDetail:
    """One session: its record, findings, subtree (nested, rolled up) and per-turn metrics."""
    got = session_detail(db, session_id, archive_store_of(request), archive_cache(request).read)
    if got is None:
        raise _not_found(session_id)
    got.trace = trace_ref(
        got.root_session_id, session_id, settings.otel_trace_url, settings.otel_service_name
    )
    return got


@router.get("/{session_id}/messages", response_model=MessagePage)
def messages(
    session_id: str,
    request: Request,
    db: ReadDbDep,
    settings: SettingsDep,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=MESSAGE_PAGE_MAX)] = 50,
    at: Annotated[
        str | None,
        Query(
            max_length=300,
            description="a message or part id to page to",
            json_schema_extra={"pattern": "^[^\\u0000]*$"},  # the door refuses NUL in any query
        ),
    ] = None,
) -> MessagePage:
    """A page of the session's messages from its archive file, oldest first."""
    path = archive_path_of(db, session_id)
    if path is None:
        raise _not_found(session_id)
    doc, error = open_archive(archive_store_of(request), path, archive_cache(request).read)
    if doc is None:
        raise ApiError(404, "archive_missing", f"the archive of {session_id!r} cannot be read: {error}")
    if at:
        msgs = doc.get("messages")
        pos = message_position(msgs if isinstance(msgs, list) else [], at)
        if pos is None:
            raise invalid_request("query.at", f"no message or part {at!r} in this session")
        offset = pos - pos % limit
    return message_page(session_id, doc, offset, limit)
