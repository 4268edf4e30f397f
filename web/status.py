"""`/api/health` and `/api/cycles`: what the fleet is doing now and did lately."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query

from telemetry.queries.cycles import CycleFilter, cycles_summary, list_cycles
from telemetry.queries.fleet_models import CyclePage, CyclesSummary, Health
from telemetry.queries.health import daemon_health
from telemetry.queries.paging import CursorError
from telemetry.services.heartbeat_files import refresh_heartbeat_files
from telemetry.store.db import session_scope
from telemetry.timeutil import Since, utcnow
from web.deps import EngineDep, ReadDbDep, SettingsDep
from web.errors import invalid_request

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["status"])


@router.get("/health", response_model=Health)
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


@router.get("/cycles", response_model=CyclePage)
def cycles(
    db: ReadDbDep,
    driver: str | None = None,
    terminal_state: str | None = None,
    since: Since = None,
    until: Since = None,
    in_flight: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    f = CycleFilter(driver, terminal_state, since, until, in_flight, limit, cursor)
    try:
        return list_cycles(db, f, utcnow())
    except CursorError as e:
        raise invalid_request("query.cursor", str(e)) from None


@router.get("/cycles/summary", response_model=CyclesSummary)
def summary(db: ReadDbDep, hours: Annotated[float, Query(gt=0, le=24 * 90)] = 24) -> dict[str, Any]:
    now = utcnow()
    return {
        "window_hours": hours,
        "since": (now - timedelta(hours=hours)).isoformat(),
        "drivers": cycles_summary(db, now - timedelta(hours=hours)),
    }
