"""One JSON error envelope for the whole API.

{"error": {"code": "...", "message": "...",
           "fields": [{"field": "body.cycle_id", "message": "..."}]}}
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

__all__ = [
    "ERROR_RESPONSES",
    "WRITE_ERROR_RESPONSES",
    "ApiError",
    "ErrorEnvelope",
    "api_error_response",
    "error_body",
    "http_error_response",
    "install_error_handlers",
    "invalid_request",
]


class ErrorField(BaseModel):
    field: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    fields: list[ErrorField]


class _ErrorDetailBody(TypedDict):
    code: str
    message: str
    fields: list[dict[str, str]]


class ErrorBody(TypedDict):
    """`ErrorEnvelope` as the handlers write it, before it is encoded."""

    error: _ErrorDetailBody
    status: NotRequired[str]  # `/api/health` during a store outage says it too


class ErrorEnvelope(BaseModel):
    """Every error answer of the API."""

    error: ErrorDetail


def _described(*pairs: tuple[int, str]) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorEnvelope, "description": text} for status, text in pairs}


# What any route may answer besides its own success (documented so clients and schema
# checkers know the envelope): malformed requests, a missing read token, unknown ids, a body
# over the limit, parameters out of range, a store that cannot answer now.
ERROR_RESPONSES = _described(
    (400, "Malformed request"),
    (401, "A token is required"),
    (404, "Not found"),
    (413, "Request body too large"),
    (422, "A field is invalid; `fields` names it"),
    (503, "The store is unavailable for now; try again after `Retry-After` seconds"),
)
WRITE_ERROR_RESPONSES = _described((409, "Contradicts what is stored"))


class ApiError(Exception):
    """Raise from a route to answer with the envelope."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: list[dict[str, str]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.fields, self.headers = (
            status,
            code,
            message,
            fields or [],
            headers,
        )


def error_body(code: str, message: str, fields: list[dict[str, str]] | None = None) -> ErrorBody:
    return {"error": {"code": code, "message": message, "fields": fields or []}}


def invalid_request(field: str, message: str) -> ApiError:
    """A 422 naming the field (`query.cursor`), for checks the request's types cannot make."""
    return ApiError(422, "invalid_request", f"{field}: {message}", [{"field": field, "message": message}])


def _loc(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(p) for p in loc)


def api_error_response(exc: ApiError) -> JSONResponse:
    """The envelope answering `exc` (also what `web.cycle_fast_path` sends)."""
    return JSONResponse(error_body(exc.code, exc.message, exc.fields), exc.status, headers=exc.headers)


async def _api_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return api_error_response(exc)


async def _validation(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    fields = [
        {"field": _loc(e.get("loc", ())), "message": str(e.get("msg", "invalid"))} for e in exc.errors()
    ]
    first = fields[0] if fields else {"field": "", "message": "invalid"}
    return JSONResponse(error_body("invalid_request", f"{first['field']}: {first['message']}", fields), 422)


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """The envelope answering an HTTP exception (a body over its limit, an unknown path)."""
    code = {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        413: "payload_too_large",
    }.get(exc.status_code, "http_error")
    return JSONResponse(error_body(code, str(exc.detail)), exc.status_code, headers=exc.headers)


async def _http(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    return http_error_response(exc)


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
