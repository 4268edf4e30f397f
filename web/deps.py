"""Dependencies shared by the routers: the app's settings, a store session, the write guard.

The ones that only read the app's state are `async def`: FastAPI runs a plain `def`
dependency on a thread of its pool, a hop that costs more than the lookup itself."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.engine import Engine
from sqlmodel import Session

from archiver.redact import Redactor
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from web.app_state import app_state
from web.errors import ApiError

__all__ = ["DbDep", "EngineDep", "ReadDbDep", "RedactorDep", "SettingsDep", "require_token"]


async def _settings(request: Request) -> Settings:
    return app_state(request.app).settings


async def _engine(request: Request) -> Engine:
    return app_state(request.app).engine


async def _redactor(request: Request) -> Redactor:
    return app_state(request.app).redactor


def _write_db(request: Request) -> Iterator[Session]:
    with session_scope(app_state(request.app).engine) as db:
        yield db


def _read_db(request: Request) -> Iterator[Session]:
    with session_scope(app_state(request.app).engine, write=False) as db:
        yield db


SettingsDep = Annotated[Settings, Depends(_settings)]
EngineDep = Annotated[Engine, Depends(_engine)]
RedactorDep = Annotated[Redactor, Depends(_redactor)]
DbDep = Annotated[Session, Depends(_write_db)]
ReadDbDep = Annotated[Session, Depends(_read_db)]

_bearer = HTTPBearer(auto_error=False)


async def require_token(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Writes need `Authorization: Bearer <token>`; 401 with WWW-Authenticate otherwise."""
    expected = app_state(request.app).ingest_token
    if creds is None or not secrets.compare_digest(creds.credentials.encode(), expected.encode()):
        raise ApiError(
            401,
            "unauthorized",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
