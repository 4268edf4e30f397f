"""`octel serve` and `octel db upgrade`."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from cli.app import app, console, fail, open_redactor, open_store, settings_of
from telemetry.store.migrate import current_revision, head_revision

if TYPE_CHECKING:
    from telemetry.settings import Settings

__all__ = ["db_app"]

db_app = typer.Typer(rich_markup_mode=None, help="The store's schema.", no_args_is_help=True)
app.add_typer(db_app, name="db")


@app.command()
def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option(help="Address to listen on (OCTEL_HOST; 127.0.0.1: this machine only).")
    ] = None,
    port: Annotated[int | None, typer.Option(help="TCP port to listen on (OCTEL_PORT, 8765).")] = None,
    long_worker_seconds: Annotated[
        float | None,
        typer.Option(help="A worker running longer than this is flagged (OCTEL_LONG_WORKER_SECONDS)."),
    ] = None,
    workers: Annotated[
        int, typer.Option(min=1, max=64, help="Worker processes answering on the same port.")
    ] = 1,
    access_log: Annotated[
        bool, typer.Option("--access-log", help="Log a line per request (request metrics count them anyway).")
    ] = False,
) -> None:
    """Run the console, ingestion API and /metrics (upgrades the store first)."""
    import uvicorn

    from telemetry.token import ensure_ingest_token
    from web.app import WeakTokenError, create_app, weak_token_check

    overrides = {
        name: value
        for name, value in (("host", host), ("port", port), ("long_worker_seconds", long_worker_seconds))
        if value is not None
    }
    settings = settings_of(ctx).model_copy(update=overrides)
    with open_store(settings):
        pass  # fail early, with one sentence, when the store is unreachable
    try:
        weak_token_check(settings, ensure_ingest_token(settings)[0])  # the app warns, once served
    except WeakTokenError as e:
        console.print(str(e), highlight=False)
        raise typer.Exit(2) from None
    _port_free(settings.host, settings.port)
    if workers > 1:
        _prepare_workers(settings)
    console.print(
        f"octel: serving on http://{settings.host}:{settings.port}"
        + (f" with {workers} workers" if workers > 1 else ""),
        highlight=False,
    )
    # uvloop and httptools when installed (uvicorn[standard], a dependency), asyncio and h11
    # where they are not. No line per request unless asked: under a fleet's writes, formatting
    # and writing it took 7 % of the server's CPU, and /metrics counts requests already.
    common: dict[str, object] = {
        "host": settings.host,
        "port": settings.port,
        "log_level": "info",
        "access_log": access_log,
    }
    if importlib.util.find_spec("httptools") is not None:  # it drops an absolute-form target's host
        from web.strict_http import StrictHttpToolsProtocol

        common["http"] = StrictHttpToolsProtocol
    with _alerting(settings):  # in this process only: one look at the fleet, whatever --workers
        if workers == 1:
            uvicorn.run(create_app(settings), **common)  # type: ignore[arg-type]
            return
        uvicorn.run("web.app:app_from_environment", factory=True, workers=workers, **common)  # type: ignore[arg-type]


@contextmanager
def _alerting(settings: Settings) -> Iterator[None]:
    """While serving: look at the fleet every `OCTEL_ALERT_FLEET_SECONDS` and deliver the
    alerts of a daemon down or a long-running worker (nothing when no channel is set)."""
    from telemetry.alerting import channels_of, start_alerts
    from telemetry.fleet_alerts import FleetAlerts
    from telemetry.store.db import make_engine

    if not channels_of(settings):
        yield
        return
    engine = make_engine(settings.db_url)
    alerts = start_alerts(settings, engine, open_redactor(settings))
    fleet = FleetAlerts(engine, alerts.sink, settings.long_worker_seconds, settings.alert_fleet_seconds)
    console.print(f"octel: alerts to {alerts.describe()}", highlight=False)
    fleet.start()
    try:
        yield
    finally:
        fleet.close()
        alerts.close()
        engine.dispose()


def _port_free(host: str, port: int) -> None:
    """Exit with one sentence when the port is taken, before saying "serving on" (uvicorn would
    print its own errno after it). Bound as uvicorn binds (SO_REUSEADDR), then released."""
    import errno
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        fail(f"cannot listen on {host}: {e.strerror}; give another address with --host", 2)
    family, kind, proto, _name, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                fail(f"port {port} on {host} is in use by another program; choose another with --port")
            fail(f"cannot listen on {host}:{port}: {e.strerror}; choose another with --host or --port")


def _prepare_workers(settings: Settings) -> None:
    """What the workers share is made once, here, before they start: the schema is upgraded
    (open_store did), the ingest token and the redaction key exist, so no two workers race to
    create them. The settings reach the workers through the environment they inherit, never
    through their command line, where any user on the machine could read a password or a
    token."""
    from telemetry.token import ensure_ingest_token
    from web.app import settings_environment

    _token, path, created = ensure_ingest_token(settings)
    if created:
        console.print(f"octel: created an ingest token in {path} (mode 0600)", highlight=False)
    open_redactor(settings)
    os.environ.update(settings_environment(settings))


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Create or upgrade the store's schema to the newest revision."""
    settings = settings_of(ctx)
    with open_store(settings) as engine:
        console.print(
            f"store at revision {current_revision(engine)} (head {head_revision()})", highlight=False
        )
