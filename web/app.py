"""The FastAPI app, built from its settings: `create_app(settings)`; no module-level state."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from pydantic import SecretStr
from sqlalchemy.engine import Engine
from starlette.middleware.gzip import GZipMiddleware
from starlette.types import Receive, Scope, Send

from telemetry.archiving import redactor_for
from telemetry.budget_rules import quotas_of
from telemetry.services.index.search_catchup import start_catchup
from telemetry.services.ingest import cycle_rows
from telemetry.services.ingest.group_commit import GroupCommit
from telemetry.services.ingest.ingest_inputs import ConflictError
from telemetry.settings import Settings
from telemetry.store.db import make_engine, refresh_planner_stats
from telemetry.store.migrate import upgrade
from telemetry.token import MIN_TOKEN_CHARS, ensure_ingest_token, short_tokens
from web import (
    api_actions,
    api_alerts,
    api_archived,
    api_asks,
    api_costs,
    api_live,
    api_quotas,
    api_search,
    api_sessions,
    console,
    ingest,
    login,
    metrics,
    otlp,
    status,
)
from web.app_state import AppState, app_state, keep_state
from web.caching import ETagMiddleware
from web.cycle_fast_path import CycleFastPath
from web.errors import ERROR_RESPONSES, install_error_handlers
from web.guard import Guard, SecurityHeaders
from web.hosts import HostCheck
from web.http_telemetry import telemetry_config
from web.login_cookie import Logins, LoginThrottle
from web.openapi_doc import say_no_nul
from web.store_outage import StoreOutage

__all__ = [
    "WeakTokenError",
    "app_from_environment",
    "create_app",
    "exposure_warning",
    "settings_environment",
    "weak_token_check",
]

log = logging.getLogger("octel")

_STATS_EVERY_S = 3600.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def exposure_warning(settings: Settings) -> str | None:
    """One sentence when the server listens beyond this machine with every read open."""
    if _loopback(settings.host) or settings.read_token:
        return None
    return (
        f"octel: serving on {settings.host} without OCTEL_READ_TOKEN: anyone who can reach "
        "this address can read every cycle, session and cost."
    )


class WeakTokenError(ValueError):
    """A token too short to serve beyond this machine."""


def _loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


def weak_token_check(settings: Settings, ingest_token: str) -> str | None:
    """Refuse (raise) a token under `MIN_TOKEN_CHARS` when serving beyond loopback; on loopback
    only this machine's users can guess, so it is one loud warning (returned) instead."""
    short = short_tokens(settings, ingest_token)
    if not short:
        return None
    verb = "is" if len(short) == 1 else "are"
    what = f"{' and '.join(short)} {verb} shorter than {MIN_TOKEN_CHARS} characters"
    if not _loopback(settings.host):
        raise WeakTokenError(f"octel: {what}: refusing to serve on {settings.host}; use a longer token.")
    return f"octel: WARNING: {what}; anyone on this machine can guess it. Use a longer token."


async def _keep_planner_stats(engine: Engine) -> None:
    """Refresh the planner's statistics now and then, as the store grows."""
    while True:
        try:
            await asyncio.to_thread(refresh_planner_stats, engine)
        except Exception as e:  # a busy store now is no reason to stop serving
            log.warning("octel: could not refresh planner statistics: %s", e)
        await asyncio.sleep(_STATS_EVERY_S)


class ConsoleGZip(GZipMiddleware):
    """Gzip for what browsers and readers fetch; a dispatcher's write (`POST /api/v1/…`) gets a
    few hundred bytes back, and skipping the wrapper saves every write its cost."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].startswith("/api/v1/"):
            await self.app(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    """Build the app; the lifespan opens the store (and upgrades it) and closes it."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = app_state(app)
        engine = make_engine(settings.db_url)
        if migrate:
            upgrade(engine)
        token, path, created = ensure_ingest_token(settings)
        if created:
            log.warning("octel: created an ingest token in %s (mode 0600)", path)
        if (weak := weak_token_check(settings, token)) is not None:
            log.warning("%s", weak)
        state.engine, state.ingest_token = engine, token
        state.redactor = redactor_for(settings)  # everything stored passes it first
        # one writer thread: SQLite has one writer at a time, and on PostgreSQL a second thread
        # wrote no more pairs a second, in batches half as large, for a sixth more CPU a pair
        state.group_commit = GroupCommit(
            engine,
            expected=(ConflictError,),
            prefetch=cycle_rows.prefetch,
            deferred=cycle_rows.deferred,
        )
        state.group_commit.start()
        if (warning := exposure_warning(settings)) is not None:
            log.warning("%s", warning)
        stats = asyncio.create_task(_keep_planner_stats(engine))
        # the search index, kept up with what was archived (every worker: only one writes each)
        catchup = start_catchup(settings, engine, state.redactor)
        try:
            yield
        finally:
            if catchup is not None:
                await asyncio.to_thread(catchup.close)
            stats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stats
            await asyncio.to_thread(state.group_commit.close)  # writes what is queued
            engine.dispose()

    # No /docs or /redoc: their pages load scripts from a CDN. /openapi.json stays.
    app = FastAPI(
        title="octel",
        version="0.1.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        responses=ERROR_RESPONSES,
        **telemetry_config(),
    )
    read = settings.read_token.get_secret_value() if settings.read_token else ""
    keep_state(
        app,
        AppState(
            settings,
            quotas=quotas_of(settings),  # a bad rules file stops the start, naming the field
            logins=Logins(read, settings.login_hours * 3600),
            login_throttle=LoginThrottle(),
        ),
    )
    install_error_handlers(app)
    app.include_router(ingest.router)
    app.include_router(otlp.router)
    app.include_router(status.router)
    app.include_router(api_archived.router)  # before api_sessions: /archived is not a session id
    app.include_router(api_sessions.router)
    app.include_router(api_costs.router)
    app.include_router(api_search.router)
    app.include_router(api_live.router)
    app.include_router(api_actions.router)
    app.include_router(api_quotas.router)
    app.include_router(api_asks.router)
    app.include_router(api_alerts.router)
    app.include_router(console.router)
    app.include_router(metrics.router)
    app.include_router(login.router)
    # added innermost first: headers ← allowed hosts ← request metrics ← tokens and body limits
    # ← a store outage as a 503 (from a route or the fast path) ← cycle begins and finishes,
    # past the door, without the router (gzip and ETag leave a dispatcher's POST as it is)
    # ← gzip ← ETag (the tag names the plain body; JSON and static text compress several-fold)
    app.add_middleware(ETagMiddleware)
    app.add_middleware(ConsoleGZip, minimum_size=1000)
    app.add_middleware(CycleFastPath)
    app.add_middleware(StoreOutage)
    app.add_middleware(Guard, settings=settings)
    app.add_middleware(metrics.RequestMetricsMiddleware)
    app.add_middleware(HostCheck, allowed_hosts=settings.hosts)
    app.add_middleware(SecurityHeaders)
    say_no_nul(app)
    return app


def settings_environment(settings: Settings) -> dict[str, str]:
    """`settings` as the `OCTEL_*` variables that give them back: what `octel serve --workers`
    hands its worker processes (the environment, which only this user can read)."""
    env = {}
    for name in Settings.model_fields:
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        elif isinstance(value, bool):
            value = "true" if value else "false"
        env[f"OCTEL_{name.upper()}"] = str(value)
    return env


def app_from_environment() -> FastAPI:
    """A worker's app under `octel serve --workers N`: settings from the environment its
    parent prepared, the schema already upgraded by the parent."""
    return create_app(Settings(), migrate=False)
