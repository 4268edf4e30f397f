"""`octel serve` and `octel db upgrade`."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.app import app, console, open_store, settings_of
from telemetry.store.migrate import current_revision, head_revision

__all__ = ["db_app"]

db_app = typer.Typer(help="The store's schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option(help="OCTEL_HOST")] = None,
    port: Annotated[int | None, typer.Option(help="OCTEL_PORT")] = None,
    long_worker_seconds: Annotated[float | None, typer.Option(help="OCTEL_LONG_WORKER_SECONDS")] = None,
) -> None:
    """Run the console, ingestion API and /metrics (upgrades the store first)."""
    import uvicorn

    from web.app import create_app

    overrides = {
        name: value
        for name, value in (("host", host), ("port", port), ("long_worker_seconds", long_worker_seconds))
        if value is not None
    }
    settings = settings_of(ctx).model_copy(update=overrides)
    with open_store(settings):
        pass  # fail early, with one sentence, when the store is unreachable
    console.print(f"octel: serving on http://{settings.host}:{settings.port}", highlight=False)
    uvicorn.run(create_app(settings), host=settings.host, port=settings.port, log_level="info")


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Create or upgrade the store's schema to the newest revision."""
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        console.print(
            f"store at revision {current_revision(engine)} (head {head_revision()})", highlight=False
        )
