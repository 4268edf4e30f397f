"""`/api/v1/…`: what dispatchers report. Token required; every call idempotent on retry.

Cycle begins and finishes, the bulk of the traffic, are written through the app's group
commit (`telemetry.services.ingest.group_commit`): validated and redacted on the event loop, then
written with whatever other writes arrived meanwhile, in one transaction, and answered after
it commits."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from archiver.claude.result import ClaudeResultError
from telemetry.queries.cycles import CycleJson, cycle_dict
from telemetry.queries.ingest_models import (
    CycleBegun,
    CycleFinished,
    DaemonBeat,
    HeartbeatStored,
    RunStored,
    StoredRun,
)
from telemetry.services.claude.runs import archive_run
from telemetry.services.ingest import ingest
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from web.app_state import AppState, app_state
from web.deps import EngineDep, RedactorDep, SettingsDep, require_token
from web.errors import WRITE_ERROR_RESPONSES, ApiError

__all__ = ["cycle_write", "router"]

router = APIRouter(
    prefix="/api/v1", tags=["ingest"], dependencies=[Depends(require_token)], responses=WRITE_ERROR_RESPONSES
)
T = TypeVar("T")


def _write(engine: Engine, fn: Callable[[Session], T]) -> T:
    """One write transaction; two first writes of one id race, so retry when they collide."""
    for attempt in range(3):
        try:
            with session_scope(engine) as db:
                return fn(db)
        except IntegrityError:
            if attempt == 2:
                raise
        except ingest.ConflictError as e:
            raise ApiError(409, "conflict", str(e)) from None
        except ClaudeResultError as e:
            raise ApiError(
                422,
                "invalid_request",
                f"body.result: {e}",
                [{"field": "body.result", "message": str(e)}],
            ) from None
    raise AssertionError("unreachable")


def _retry(model: type[BaseModel]) -> dict[int | str, dict[str, Any]]:
    return {200: {"model": model, "description": "Already stored: a retry changes nothing"}}


def _begun(p: ingest.CycleBegin) -> Callable[[Session], tuple[CycleJson, bool]]:
    def run(db: Session) -> tuple[CycleJson, bool]:
        row, created = ingest.begin_clean(db, p, utcnow())
        return cycle_dict(row), created

    return run


def _finished(p: ingest.CycleFinish) -> Callable[[Session], tuple[CycleJson, bool]]:
    def run(db: Session) -> tuple[CycleJson, bool]:
        row, changed = ingest.finish_clean(db, p, utcnow())
        return cycle_dict(row), changed

    return run


async def cycle_write(state: AppState, p: ingest.CycleBegin | ingest.CycleFinish) -> tuple[bytes, int]:
    """A validated begin or finish, redacted by the app's one redactor and written through its
    group commit; the answer's JSON and status, once its batch has committed. The route and
    `web.cycle_fast_path` both answer with it.

    The answer is built here as bytes: it is the declared model's shape already (the record's
    `orphaned` is false for a cycle just written), so FastAPI need not validate and encode it
    again."""
    commit = state.group_commit
    # the app's one redactor first; the locks are of what is stored. Each reads its stored
    # row (if any) first: read with the rest of its batch's, so a new one can be held back
    if isinstance(p, ingest.CycleBegin):
        begin = ingest.clean(state.redactor, p)
        write, keys, reads = _begun(begin), ingest.cycle_lock_keys(begin), (begin.cycle_id,)
    else:
        finish = ingest.clean(state.redactor, p)
        write, keys, reads = _finished(finish), ingest.cycle_lock_keys(finish), (finish.cycle_id,)
    try:
        row, news = await commit.run(write, keys, reads)
    except ingest.ConflictError as e:
        raise ApiError(409, "conflict", str(e)) from None
    row["orphaned"] = False
    if isinstance(p, ingest.CycleBegin):
        return orjson.dumps({"cycle": row, "created": news}), 201 if news else 200
    return orjson.dumps({"cycle": row, "changed": news}), 200


@router.post("/cycles/begin", status_code=201, response_model=CycleBegun, responses=_retry(CycleBegun))
async def begin(p: ingest.CycleBegin, request: Request) -> Response:
    body, status = await cycle_write(app_state(request.app), p)
    return Response(body, status, media_type="application/json")


@router.post("/cycles/finish", response_model=CycleFinished)
async def finish(p: ingest.CycleFinish, request: Request) -> Response:
    body, status = await cycle_write(app_state(request.app), p)
    return Response(body, status, media_type="application/json")


@router.post("/heartbeat", response_model=HeartbeatStored)
def heartbeat(p: ingest.HeartbeatIn, engine: EngineDep, redactor: RedactorDep) -> HeartbeatStored:
    def run(db: Session) -> DaemonBeat:
        d = ingest.heartbeat(db, p, utcnow(), redactor=redactor)
        return DaemonBeat(
            driver=d.driver,
            host=d.host,
            pid=d.pid,
            last_heartbeat_at=d.last_heartbeat_at.isoformat(),
            in_flight_cycle_id=d.in_flight_cycle_id,
        )

    return HeartbeatStored(daemon=_write(engine, run))


@router.post("/agent-runs", status_code=201, response_model=RunStored, responses=_retry(RunStored))
def agent_run(
    p: ingest.AgentRunIn, engine: EngineDep, redactor: RedactorDep, settings: SettingsDep, response: Response
) -> RunStored:
    """Store one Claude Code CLI run; given stream-json, archive its conversation too."""

    def run(db: Session) -> tuple[StoredRun, str | None, bool]:
        r, created = ingest.add_agent_run(db, p, utcnow(), redactor=redactor)
        stored = StoredRun(
            run_key=r.run_key,
            task=r.task,
            agent=r.agent,
            model=r.model,
            subtype=r.subtype,
            is_error=r.is_error,
            cost_usd=r.cost_usd,
        )
        return stored, r.session_id, created

    row, session_id, created = _write(engine, run)
    response.status_code = 201 if created else 200
    kept = None
    if isinstance(p.result, str):  # stream-json: keep the conversation, as `octel runs add` does
        got = archive_run(
            p.result, session_id, claude_dir=None, settings=settings, engine=engine, label=p.task
        )
        kept = got.to_dict() if got is not None else None
    return RunStored(run=row, created=created, archive=kept)
