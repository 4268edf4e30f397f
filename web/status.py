"""`/api/health` and `/api/cycles`: what the fleet is doing now and did lately."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Query
from sqlmodel import Session

from telemetry.queries.cycles import CycleFilter, cycles_summary, list_cycles
from telemetry.queries.fleet_models import CyclePage, CyclesSummary, Health
from telemetry.queries.health import fleet_health
from telemetry.queries.paging import CursorError
from telemetry.services.heartbeat_files import refresh_heartbeat_files
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.timeutil import Since, utcnow
from web.deps import EngineDep, ReadDbDep, RedactorDep, SettingsDep
from web.errors import invalid_request

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["status"])


@router.get("/health", response_model=Health)
def health(settings: SettingsDep, engine: EngineDep, redactor: RedactorDep) -> dict[str, Any]:
    """Every daemon and every driver with a cycle in flight; `status` is the worst state."""
    now = utcnow()
    globs = settings.heartbeat_globs
    if globs:
        with session_scope(engine) as db:
            refresh_heartbeat_files(db, globs, now, redactor=redactor)
    with session_scope(engine, write=False) as db:
        fleet = fleet_health(db, now, settings.long_worker_seconds)
    return {
        "status": fleet.pop("status"),
        "now": now.isoformat(),
        "long_worker_seconds": settings.long_worker_seconds,
        **fleet,
    }


def _orphaned(db: Session, settings: Settings, now: datetime) -> set[str]:
    """Open cycles whose daemon is down: they stay open in the table but will never finish."""
    fleet = fleet_health(db, now, settings.long_worker_seconds)
    return {
        d["in_flight_cycle"]["cycle_id"]
        for d in fleet["daemons"]
        if d["in_flight_cycle"] and d["in_flight_cycle"]["orphaned"]
    }


@router.get("/cycles", response_model=CyclePage)
def cycles(
    db: ReadDbDep,
    settings: SettingsDep,
    driver: str | None = None,
    terminal_state: str | None = None,
    since: Since = None,
    until: Since = None,
    in_flight: bool | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    f = CycleFilter(driver, terminal_state, since, until, in_flight, limit, cursor)
    now = utcnow()
    try:
        page = list_cycles(db, f, now)
    except CursorError as e:
        raise invalid_request("query.cursor", str(e)) from None
    orphans = _orphaned(db, settings, now) if any(c["in_flight"] for c in page["items"]) else set()
    for c in page["items"]:
        c["orphaned"] = c["cycle_id"] in orphans
    return page


@router.get("/cycles/summary", response_model=CyclesSummary)
def summary(
    db: ReadDbDep, settings: SettingsDep, hours: Annotated[float, Query(gt=0, le=24 * 90)] = 24
) -> dict[str, Any]:
    """Per driver: cycles by state; `in_flight` counts live open cycles, `orphaned` the open
    cycles of a daemon that is down."""
    now = utcnow()
    since = now - timedelta(hours=hours)
    drivers = cycles_summary(db, since)
    orphans: dict[str, int] = {}
    if any(d["in_flight"] for d in drivers):
        for d in fleet_health(db, now, settings.long_worker_seconds)["daemons"]:
            c = d["in_flight_cycle"]
            if c and c["orphaned"] and c["started_at"] and c["started_at"] >= since.isoformat():
                orphans[d["driver"]] = orphans.get(d["driver"], 0) + 1
    for d in drivers:
        d["orphaned"] = min(orphans.get(d["driver"], 0), d["in_flight"])
        d["in_flight"] -= d["orphaned"]
    return {"window_hours": hours, "since": since.isoformat(), "drivers": drivers}
