"""`POST /v1/metrics` and `POST /v1/logs`: an OTLP/HTTP receiver for Claude Code's own telemetry.

Point a fleet's CLIs at octel (`OTEL_EXPORTER_OTLP_ENDPOINT=http://octel:8765`, the ingest
token as `Authorization: Bearer …` in `OTEL_EXPORTER_OTLP_HEADERS`); JSON and protobuf bodies
are both read, plain or gzip-compressed (`OTEL_EXPORTER_OTLP_COMPRESSION=gzip`). The answer is
OTLP's own: an empty export response, or `partialSuccess` counting the data points or log
records that could not be kept (the rest are); a body that is not an export request is a 400
naming the field.
"""

from __future__ import annotations

import zlib

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, Response
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsPartialSuccess,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsPartialSuccess,
    ExportMetricsServiceResponse,
)
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from archiver.claude.otlp import Export, OtlpError, decode, read_export
from archiver.redact import Redactor
from telemetry.services.claude.otlp import apply
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


def _bad(field: str, message: str) -> ApiError:
    return ApiError(400, "invalid_request", f"{field}: {message}", [{"field": field, "message": message}])


def _inflate(body: bytes, encoding: str) -> bytes:
    """The body as sent before compression; a gzip bomb stops at the limit, never expands."""
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise _bad("header.content-encoding", f"{encoding!r} is not supported (gzip or none)")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, _MAX_BODY + 1)
    except zlib.error as e:
        raise _bad("body", f"not gzip ({e})") from None
    if len(out) > _MAX_BODY:
        raise ApiError(413, "payload_too_large", f"body: more than {_MAX_BODY} bytes once inflated")
    if not inflater.eof:
        raise _bad("body", "gzip stream cut short")
    return out


def _store(body: bytes, ctype: str, signal: str, engine: Engine, redactor: Redactor) -> Export:
    """Decode and store one export request (blocking: runs in the thread pool)."""
    try:
        got = read_export(decode(body, ctype, signal), signal)
    except OtlpError as e:
        field, _, message = str(e).partition(": ")
        raise _bad(field, message) from None
    if got.found:
        with session_scope(engine) as db:
            apply(db, got.found, utcnow(), redactor)
    return got


def _answer(got: Export, signal: str) -> Message:
    """OTLP's export response: empty, or the count of what was refused and the first reason."""
    if not got.rejected:
        return ExportMetricsServiceResponse() if signal == "metrics" else ExportLogsServiceResponse()
    if signal == "metrics":
        part = ExportMetricsPartialSuccess(rejected_data_points=got.rejected, error_message=got.message)
        return ExportMetricsServiceResponse(partial_success=part)
    logs = ExportLogsPartialSuccess(rejected_log_records=got.rejected, error_message=got.message)
    return ExportLogsServiceResponse(partial_success=logs)


async def _receive(request: Request, signal: str, engine: Engine, redactor: Redactor) -> Response:
    body = await request.body()
    if len(body) > _MAX_BODY:
        raise ApiError(413, "too_large", f"body: more than {_MAX_BODY} bytes")
    ctype = request.headers.get("content-type", "application/json")
    body = _inflate(body, request.headers.get("content-encoding", "").strip().lower())
    # decoding and the database are blocking work: off the event loop, which serves every request
    answer = _answer(await run_in_threadpool(_store, body, ctype, signal, engine, redactor), signal)
    if "protobuf" in ctype:
        return Response(answer.SerializeToString(), media_type="application/x-protobuf")
    return JSONResponse(MessageToDict(answer))


@router.post("/metrics", openapi_extra=_BODY)
async def otlp_metrics(request: Request, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Claude Code metrics: `claude_code.cost.usage` and `claude_code.token.usage` per session."""
    return await _receive(request, "metrics", engine, redactor)


@router.post("/logs", openapi_extra=_BODY)
async def otlp_logs(request: Request, engine: EngineDep, redactor: RedactorDep) -> Response:
    """Claude Code events: `api_request`, `api_error`, `tool_result` per session."""
    return await _receive(request, "logs", engine, redactor)
