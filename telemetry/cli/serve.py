"""`octel serve` and `octel db upgrade`."""

from __future__ import annotations

from typing import Annotated

import typer

from telemetry.cli.app import app, console, open_store, settings_of
from telemetry.migrate import current_revision, head_revision

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
    import os

    import uvicorn

    settings = settings_of(ctx)
    # The app is built by import string in its own process state, so pass flags on as settings.
    for name, value in (("HOST", host), ("PORT", port), ("LONG_WORKER_SECONDS", long_worker_seconds)):
        if value is not None:
            os.environ[f"OCTEL_{name}"] = str(value)
    os.environ["OCTEL_DATA_DIR"] = str(settings.data_dir)
    if settings.database_url:
        os.environ["OCTEL_DATABASE_URL"] = settings.database_url
    if settings.archive_dir:
        os.environ["OCTEL_ARCHIVE_DIR"] = str(settings.archive_dir)
    with open_store(settings):
        pass  # fail early, with one sentence, when the store is unreachable
    console.print(
        f"octel: serving on http://{host or settings.host}:{port or settings.port}", highlight=False
    )
    uvicorn.run(
        "web.app:create_app",
        factory=True,
        host=host or settings.host,
        port=port or settings.port,
        log_level="info",
        workers=1,
    )


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Create or upgrade the store's schema to the newest revision."""
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        console.print(
            f"store at revision {current_revision(engine)} (head {head_revision()})", highlight=False
        )
