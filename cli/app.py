"""The `octel` Typer app and what every command shares: settings, errors, JSON output.

A command opens the store, calls one library function that returns data, and renders it as a
rich table or, with `--json`, as JSON. Library errors become one sentence and a non-zero exit.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import orjson
import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from sqlalchemy.engine import Engine
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

__all__ = [
    "app",
    "command_group",
    "console",
    "err_console",
    "fail",
    "open_store",
    "print_json",
    "settings_of",
]

app = typer.Typer(
    name="octel",
    help="Flight recorder and control tower for fleets of OpenCode and Claude Code agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)
# Piped output is data: wide enough that rich never wraps a cell or cuts it with "…".
_PIPED_WIDTH = 100_000


def fail(message: str, code: int = 1) -> NoReturn:
    """One clear sentence on stderr, then exit (2 for bad input, 1 for failures)."""
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    """JSON on stdout; a typed answer prints as its model dumps (the API's `response_model`)."""
    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", exclude_unset=True)
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option(help="OCTEL_DATA_DIR: folder for data.")] = None,
    database_url: Annotated[str | None, typer.Option(help="OCTEL_DATABASE_URL: the store.")] = None,
    archive_dir: Annotated[Path | None, typer.Option(help="OCTEL_ARCHIVE_DIR: archive files.")] = None,
) -> None:
    if not console.is_terminal:
        console.width = _PIPED_WIDTH
    overrides: dict[str, Any] = {}
    if data_dir is not None:
        overrides["data_dir"] = data_dir
    if database_url is not None:
        overrides["database_url"] = database_url
    if archive_dir is not None:
        overrides["archive_dir"] = archive_dir
    try:
        ctx.obj = Settings(**overrides)
    except ValidationError as e:
        first = e.errors()[0]
        fail(f"setting {'.'.join(map(str, first['loc'])) or '?'}: {first['msg']}", 2)


def command_group(name: str, help_text: str) -> typer.Typer:
    """The sub-app `name` of `octel`, shared by every module that adds commands to it."""
    for group in app.registered_groups:
        if group.name == name and group.typer_instance is not None:
            return group.typer_instance
    created = typer.Typer(help=help_text, no_args_is_help=True)
    app.add_typer(created, name=name)
    return created


def settings_of(ctx: typer.Context) -> Settings:
    root = ctx.find_root()
    s = root.obj
    if not isinstance(s, Settings):  # a command called without the root callback (library use)
        s = Settings()
        root.obj = s
    return s


@contextmanager
def open_store(settings: Settings, *, migrate: bool = True) -> Iterator[Engine]:
    """An engine on the configured store, upgraded to the current schema; a clear error if unreachable."""
    try:
        engine = make_engine(settings.db_url)
    except (ArgumentError, NoSuchModuleError) as e:
        fail(f"OCTEL_DATABASE_URL is not a usable database URL: {e}", 2)
    except OSError as e:
        fail(f"cannot create the store's folder: {e}")
    try:
        if migrate:
            upgrade(engine)
        yield engine
    except OperationalError as e:
        fail(f"cannot use the store at {engine.url.render_as_string(hide_password=True)}: {e.orig}")
    finally:
        engine.dispose()
