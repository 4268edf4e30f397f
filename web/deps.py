"""Dependencies shared by the routers: the app's settings, a store session, the write guard."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.engine import Engine
from sqlmodel import Session

from telemetry.settings import Settings
from telemetry.store.db import session_scope
from web.errors import ApiError

__all__ = ["DbDep", "EngineDep", "ReadDbDep", "SettingsDep", "require_token"]


def _settings(request: Request) -> Settings:
    s: Settings = request.app.state.settings
    return s


def _engine(request: Request) -> Engine:
    e: Engine = request.app.state.engine
    return e


def _write_db(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.engine) as db:
        yield db


def _read_db(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.engine, write=False) as db:
        yield db


SettingsDep = Annotated[Settings, Depends(_settings)]
EngineDep = Annotated[Engine, Depends(_engine)]
DbDep = Annotated[Session, Depends(_write_db)]
ReadDbDep = Annotated[Session, Depends(_read_db)]

_bearer = HTTPBearer(auto_error=False)


def require_token(
    request: Request, creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """Writes need `Authorization: Bearer <token>`; 401 with WWW-Authenticate otherwise."""
    expected: str = request.app.state.ingest_token
    if creds is None or not secrets.compare_digest(creds.credentials.encode(), expected.encode()):
        raise ApiError(
            401,
            "unauthorized",
            "a valid bearer token is required",
            headers={"WWW-Authenticate": "Bearer"},
        )
