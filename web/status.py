"""`/api/health` and `/api/cycles`: what the fleet is doing now and did lately."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Query

from telemetry.queries.cycle_fleet import cycles_page, summary_answer
from telemetry.queries.cycles import CycleFilter
from telemetry.queries.fleet_models import CyclePage, CyclesSummary, Health
from telemetry.queries.health import cached_liveness
from telemetry.queries.health_view import PER_DRIVER, fleet_health
from telemetry.queries.paging import CursorError
from telemetry.services.ingest.heartbeat_files import refresh_heartbeat_files
from telemetry.store.db import session_scope
from telemetry.timeutil import Since, utcnow
from web.deps import EngineDep, ReadDbDep, RedactorDep, SettingsDep
from web.errors import invalid_request

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["status"])


@router.get("/health", response_model=Health)
def health(settings: SettingsDep, engine: EngineDep, redactor: RedactorDep) -> Health:
    """Every daemon and every driver with a cycle in flight; `status` is the worst state."""
    now = utcnow()
    globs = settings.heartbeat_globs
    if globs:
        with session_scope(engine) as db:
            refresh_heartbeat_files(db, globs, now, redactor=redactor)
    with session_scope(engine, write=False) as db:
        return fleet_health(db, now, settings.long_worker_seconds, cached_liveness(), PER_DRIVER)


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
    cycle: Annotated[str | None, Query(description="only the cycle of this exact id")] = None,
) -> CyclePage:
    """Cycles newest first; `cycle` finds one by its id (the other filters still apply)."""
    f = CycleFilter(driver, terminal_state, since, until, in_flight, limit, cursor, cycle)
    try:
        return cycles_page(db, f, utcnow(), settings.long_worker_seconds)
    except CursorError as e:
        raise invalid_request("query.cursor", str(e)) from None


@router.get("/cycles/summary", response_model=CyclesSummary)
def summary(
    db: ReadDbDep, settings: SettingsDep, hours: Annotated[float, Query(gt=0, le=24 * 90)] = 24
) -> CyclesSummary:
    """Per driver: cycles by state; `in_flight` counts live open cycles, `orphaned` the open
    cycles of a daemon that is down (`telemetry.queries.cycle_fleet`)."""
    now = utcnow()
    return summary_answer(db, now - timedelta(hours=hours), now, settings.long_worker_seconds, hours)
