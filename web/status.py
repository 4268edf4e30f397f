"""`/api/health` and `/api/cycles`: what the fleet is doing now and did lately."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from telemetry.queries.cycles import CycleFilter, cycles_summary, list_cycles
from telemetry.queries.health import daemon_health
from telemetry.queries.paging import CursorError
from telemetry.services.heartbeat_files import refresh_heartbeat_files
from telemetry.store.db import session_scope
from telemetry.timeutil import parse_since, utcnow
from web.deps import EngineDep, ReadDbDep, SettingsDep
from web.errors import ApiError

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["status"])


def _time(name: str, value: str | None) -> Any:
    if value is None:
        return None
    try:
        return parse_since(value, utcnow())
    except ValueError as e:
        raise ApiError(
            422,
            "invalid_request",
            f"query.{name}: {e}",
            [{"field": f"query.{name}", "message": str(e)}],
        ) from None


@router.get("/health")
def health(settings: SettingsDep, engine: EngineDep) -> dict[str, Any]:
    now = utcnow()
    globs = settings.heartbeat_globs
    if globs:
        with session_scope(engine) as db:
            refresh_heartbeat_files(db, globs, now)
    with session_scope(engine, write=False) as db:
        daemons = daemon_health(db, now, settings.long_worker_seconds)
    return {
        "status": "ok",
        "now": now.isoformat(),
        "long_worker_seconds": settings.long_worker_seconds,
        "daemons": [d.to_dict() for d in daemons],
    }


@router.get("/cycles")
def cycles(
    db: ReadDbDep,
    driver: str | None = None,
    terminal_state: str | None = None,
    since: Annotated[str | None, Query(description="24h, 7d or an ISO time")] = None,
    until: Annotated[str | None, Query(description="24h, 7d or an ISO time")] = None,
    in_flight: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    f = CycleFilter(
        driver,
        terminal_state,
        _time("since", since),
        _time("until", until),
        in_flight,
        limit,
        cursor,
    )
    try:
        return list_cycles(db, f, utcnow())
    except CursorError as e:
        raise ApiError(
            422,
            "invalid_request",
            f"query.cursor: {e}",
            [{"field": "query.cursor", "message": str(e)}],
        ) from None


@router.get("/cycles/summary")
def summary(db: ReadDbDep, hours: Annotated[float, Query(gt=0, le=24 * 90)] = 24) -> dict[str, Any]:
    now = utcnow()
    return {
        "window_hours": hours,
        "since": (now - timedelta(hours=hours)).isoformat(),
        "drivers": cycles_summary(db, now - timedelta(hours=hours)),
    }
