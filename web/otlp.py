"""`POST /v1/metrics` and `POST /v1/logs`: an OTLP/HTTP receiver for Claude Code's own telemetry.

Point a fleet's CLIs at octel (`OTEL_EXPORTER_OTLP_ENDPOINT=http://octel:8765`, the ingest
token as `Authorization: Bearer …` in `OTEL_EXPORTER_OTLP_HEADERS`); JSON and protobuf bodies
are both read. The answer is OTLP's own (an empty export response, or `partialSuccess`); a body
that is not an export request is a 400 naming the field.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from archiver.redact import Redactor
from telemetry.services.otlp_claude import OtlpError, apply, decode, observations
from telemetry.store.db import session_scope
from telemetry.timeutil import utcnow
from web.deps import EngineDep, RedactorDep, require_token
from web.errors import ApiError

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["otlp"], dependencies=[Depends(require_token)])
_MAX_BODY = 16 * 1024 * 1024
# The body is read by hand (JSON or protobuf); the schema says at least that it is required and,
# as JSON, an object, so the OpenAPI describes the request a client must send.
_BODY = {
    "requestBody": {
        "required": True,
        "description": "An OTLP export request: JSON, or protobuf (`application/x-protobuf`).",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


def _store(body: bytes, ctype: str, signal: str, engine: Engine, redactor: Redactor) -> None:
    """Decode and store one export request (blocking: runs in the thread pool)."""
    try:
        found = observations(decode(body, ctype, signal), signal)
    except OtlpError as e:
        field = str(e).split(":", 1)[0]
        raise ApiError(400, "invalid_request", str(e), [{"field": field, "message": str(e)}]) from None
    if found:
        with session_scope(engine) as db:
            apply(db, found, utcnow(), redactor)


async def _receive(request: Request, signal: str, engine: Engine, redactor: Redactor) -> Response:
    body = await request.body()
    if len(body) > _MAX_BODY:
        raise ApiError(413, "too_large", f"body: more than {_MAX_BODY} bytes")
    ctype = request.headers.get("content-type", "application/json")
    # decoding and the database are blocking work: off the event loop, which serves every request
    await run_in_threadpool(_store, body, ctype, signal, engine, redactor)
    if "protobuf" in ctype:  # an empty Export*ServiceResponse
        return Response(b"", media_type="application/x-protobuf")
    return JSONResponse({})


@router.post("/metrics", openapi_extra=_BODY)
async def otlp_metrics(request: Request, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Claude Code metrics: `claude_code.cost.usage` and `claude_code.token.usage` per session."""
    return await _receive(request, "metrics", engine, redactor)


@router.post("/logs", openapi_extra=_BODY)
async def otlp_logs(request: Request, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Claude Code events: `api_request`, `api_error`, `tool_result` per session."""
    return await _receive(request, "logs", engine, redactor)
