"""The FastAPI app, built from its settings: `create_app(settings)`; no module-level state."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy.engine import Engine

from telemetry.settings import Settings
from telemetry.store.db import make_engine, refresh_planner_stats
from telemetry.store.migrate import upgrade
from telemetry.token import ensure_ingest_token
from web import api_archived, api_costs, api_live, api_sessions, console, ingest, metrics, status
from web.errors import install_error_handlers

__all__ = ["create_app"]

log = logging.getLogger("octel")

_STATS_EVERY_S = 3600.0


async def _keep_planner_stats(engine: Engine) -> None:
    """Refresh the planner's statistics now and then, as the store grows."""
    while True:
        try:
            await asyncio.to_thread(refresh_planner_stats, engine)
        except Exception as e:  # a busy store now is no reason to stop serving
            log.warning("octel: could not refresh planner statistics: %s", e)
        await asyncio.sleep(_STATS_EVERY_S)


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    """Build the app; the lifespan opens the store (and upgrades it) and closes it."""
    settings = settings or Settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = make_engine(settings.db_url)
        if migrate:
            upgrade(engine)
        token, path, created = ensure_ingest_token(settings)
        if created:
            log.warning("octel: created an ingest token in %s (mode 0600)", path)
        app.state.settings, app.state.engine, app.state.ingest_token = settings, engine, token
        stats = asyncio.create_task(_keep_planner_stats(engine))
        try:
            yield
        finally:
            stats.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await stats
            engine.dispose()

    app = FastAPI(title="octel", version="0.1.0", lifespan=lifespan)
    install_error_handlers(app)
    app.include_router(ingest.router)
    app.include_router(status.router)
    app.include_router(api_archived.router)  # before api_sessions: /archived is not a session id
    app.include_router(api_sessions.router)
    app.include_router(api_costs.router)
    app.include_router(api_live.router)
    app.include_router(console.router)
    app.include_router(metrics.router)
    app.add_middleware(metrics.RequestMetricsMiddleware)
    return app
