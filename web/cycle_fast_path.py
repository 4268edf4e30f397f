"""`POST /api/v1/cycles/begin` and `/finish`, the writes dispatchers send most, answered
without the router.

Under many writers the router, FastAPI's dependency resolution and its request and response
machinery cost more CPU than the write itself. This middleware sits just inside the door, so
the `Host` check, the door (`web.guard`: the ingest token, the body limits, NUL in the query),
the request metrics and the security headers apply as to any request (gzip and ETag, inside
it, leave a dispatcher's POST as it is). It reads the
body, validates it with the route's own pydantic model, and writes it through the function the
route calls (`web.ingest.cycle_write`: the app's one redactor, then the group commit, answered
after the commit).

Anything it does not take as is (a body that is not a JSON object, that does not validate,
another content type) is handed to the route unchanged, body included: every refusal is the
route's own answer, word for word, a 4xx naming the field.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from telemetry.services.ingest.ingest_inputs import CycleBegin, CycleFinish
from web import ingest
from web.app_state import app_state
from web.errors import ApiError, api_error_response, http_error_response

__all__ = ["CycleFastPath"]

_MODELS: dict[str, type[CycleBegin] | type[CycleFinish]] = {
    "/api/v1/cycles/begin": CycleBegin,
    "/api/v1/cycles/finish": CycleFinish,
}
_ROUTES = {r.path: r for r in ingest.router.routes if isinstance(r, APIRoute) and r.path in _MODELS}
_JSON_HEADERS = [(b"content-type", b"application/json")]


def _json_body(scope: Scope) -> bool:
    """The route reads the body as JSON, and so may we: `Content-Type` absent or
    `application/json` (with parameters or not). FastAPI reads `application/*+json` too;
    those go to the route."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            return bool(value.split(b";", 1)[0].strip().lower() == b"application/json")
    return True


def validated(model: type[BaseModel], body: bytes) -> Any:
    """The body as the route's model, or None for anything the route must answer itself. Read
    with the standard library's JSON reader, as the route reads it (orjson reads an integer
    past 64 bits as a float, which the route refuses): the same text, the same values."""
    try:
        obj = json.loads(body)
        return model.model_validate(obj) if isinstance(obj, dict) else None
    except Exception:  # the route's own answer for it, whatever it is
        return None


async def _body(receive: Receive) -> bytes | None:
    """The whole body; None when the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body already read, then whatever comes next."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


class CycleFastPath:
    """Cycle begins and finishes straight to `web.ingest.cycle_write`; everything else, and
    anything they do not take as is, to the app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        model = _MODELS.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if model is None or not _json_body(scope):
            await self.app(scope, receive, send)
            return
        try:
            body = await _body(receive)
        except HTTPException as e:  # the door's limit on a streamed body
            await http_error_response(e)(scope, receive, send)
            return
        if body is None:
            return
        p = validated(model, body)
        if p is None:
            await self.app(scope, _replay(body, receive), send)
            return
        scope["route"] = _ROUTES[scope["path"]]  # request metrics label it by its route
        try:
            answer, status = await ingest.cycle_write(app_state(scope["app"]), p)
        except ApiError as e:
            await api_error_response(e)(scope, receive, send)
            return
        headers = [*_JSON_HEADERS, (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": answer})
