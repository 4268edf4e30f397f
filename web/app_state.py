"""What one app holds while it serves: `AppState`, one typed attribute of Starlette's `app.state`.

`create_app` makes it with what the settings decide (the quota windows, the console logins);
the lifespan adds what needs the store (the engine, the ingest token, the redactor, the group
commit) and the attributes it sets do not exist before it runs. A module that makes something
of its own on first use (the archive cache and store, the query table, the metrics registry)
keeps it here too, under its type (`made`): one per app, never a module-level global.
Every reader goes through `app_state(app)`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.types import ASGIApp

from archiver.redact import Redactor
from telemetry.services.ingest.group_commit import GroupCommit
from telemetry.settings import Settings
from tower.quotas import Quota
from web.login_cookie import Logins, LoginThrottle

__all__ = ["AppState", "app_state", "keep_state"]

T = TypeVar("T")
_ATTRIBUTE = "octel"  # the one attribute of `app.state`


@dataclass(slots=True, eq=False)
class AppState:
    """The app's settings and what it serves with."""

    settings: Settings
    quotas: tuple[Quota, ...]  # of the rules file: a bad one stops the start, naming the field
    logins: Logins
    login_throttle: LoginThrottle
    # set by the lifespan, once the store is open
    engine: Engine = field(init=False)
    ingest_token: str = field(init=False)
    redactor: Redactor = field(init=False)  # everything stored passes it first
    group_commit: GroupCommit = field(init=False)
    _made: dict[type[Any], Any] = field(init=False, default_factory=dict, repr=False)
    _making: threading.RLock = field(init=False, default_factory=threading.RLock, repr=False)

    def made(self, kind: type[T], make: Callable[[], T]) -> T:
        """The app's one `kind`, made by `make()` on first use (once, whichever thread asks)."""
        found: T | None = self._made.get(kind)
        if found is None:
            with self._making:
                found = self._made.get(kind)
                if found is None:
                    found = self._made[kind] = make()
        return found


def app_state(app: ASGIApp) -> AppState:
    """The state of an app `web.app.create_app` built: the app a request, a middleware's scope
    or a test client holds."""
    state: AppState = getattr(cast(Starlette, app).state, _ATTRIBUTE)
    return state


def keep_state(app: Starlette, state: AppState) -> AppState:
    """Hold `state` as the app's (`create_app`, once)."""
    setattr(app.state, _ATTRIBUTE, state)
    return state
