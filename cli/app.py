"""The `octel` Typer app and what every command shares: settings, errors, JSON output.

A command opens the store, calls one library function that returns data, and renders it as a
rich table or, with `--json`, as JSON. Library errors become one sentence and a non-zero exit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypedDict

import typer
from typer.core import TyperGroup
from typer.models import CommandInfo, TyperInfo

# Imports of what a command uses (rich, pydantic settings, SQLAlchemy, orjson) happen inside
# the functions that use it: `octel --help` starts on typer alone.
if TYPE_CHECKING:
    from rich.console import Console

    console: Console
    err_console: Console
    from sqlalchemy.engine import Engine

    from archiver.redact import Redactor
    from telemetry.settings import Settings

__all__ = [
    "app",
    "command_group",
    "console",
    "err_console",
    "fail",
    "open_redactor",
    "open_store",
    "print_json",
    "settings_of",
]


# `octel --help` lists commands in the order of use: run and record, ask, send, keep tidy.
ORDER = (
    "serve",
    "watch",
    "archive",
    "import",
    "sessions",
    "search",
    "why",
    "detect",
    "cycles",
    "costs",
    "quotas",
    "runs",
    "lost",
    "asks",
    "actions",
    "alerts",
    "export",
    "archives",
    "janitor",
    "prune",
    "db",
    "doctor",
)


class _InOrder(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:  # typer's own vendored click Context
        rank = {name: i for i, name in enumerate(ORDER)}
        return sorted(super().list_commands(ctx), key=lambda n: (rank.get(n, len(rank)), n))


class _Octel(typer.Typer):
    """The root app. `loader`, when set, registers every command the first time the app's
    commands are read (library and test use); `cli.main` clears it and loads only the command
    it runs."""

    loader: Callable[[], None] | None = None
    _loading = False

    @property
    def registered_commands(self) -> list[CommandInfo]:
        self._load()
        return self.__dict__["_commands"]  # type: ignore[no-any-return]

    @registered_commands.setter
    def registered_commands(self, value: list[CommandInfo]) -> None:
        self.__dict__["_commands"] = value

    @property
    def registered_groups(self) -> list[TyperInfo]:
        self._load()
        return self.__dict__["_groups"]  # type: ignore[no-any-return]

    @registered_groups.setter
    def registered_groups(self, value: list[TyperInfo]) -> None:
        self.__dict__["_groups"] = value

    def _load(self) -> None:
        if self.loader is not None and not self._loading:
            self._loading = True
            self.loader()


# Plain help (no rich boxes): a flag reads `--abort-stuck / --no-abort-stuck`, never `<bool>`,
# and `octel --help` does not pay for importing rich.
app = _Octel(
    rich_markup_mode=None,
    name="octel",
    help="Flight recorder and control tower for fleets of OpenCode and Claude Code agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=_InOrder,
)
# Piped output is data: wide enough that rich never wraps a cell, a sentence or a path, nor
# cuts it with "…" (stdout and stderr alike: an error read from a log is one line).
_PIPED_WIDTH = 100_000


_MADE: dict[str, Console] = {}


def _made(name: str) -> Console:
    """`console` or `err_console` itself, made the first time a command prints."""
    if name not in _MADE:
        from rich.console import Console

        made = Console(stderr=name == "err_console")
        if not made.is_terminal:
            made.width = _PIPED_WIDTH
        _MADE[name] = made
    return _MADE[name]


class _Deferred:
    """Stands for a console until its first use, so a module may import `console` at its top
    and `octel --help`, or a command that prints only JSON, still never imports rich."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(_made(self._name), attr)

    # `with console:` (rich's Live and progress bars) looks these up on the type, not the object
    def __enter__(self) -> Console:
        return _made(self._name).__enter__()

    def __exit__(self, *exc: Any) -> None:
        _made(self._name).__exit__(*exc)


if not TYPE_CHECKING:
    console = _Deferred("console")
    err_console = _Deferred("err_console")


def fail(message: str, code: int = 1) -> NoReturn:
    """One clear sentence on stderr, then exit (2 for bad input, 1 for failures)."""
    from rich.markup import escape

    from archiver.urls import without_credentials

    _made("err_console").print(f"[bold red]error:[/] {escape(without_credentials(message))}", highlight=False)
    raise typer.Exit(code)


def print_json(data: Any) -> None:
    """JSON on stdout; a typed answer prints as its model dumps (the API's `response_model`)."""
    import orjson
    from pydantic import BaseModel

    if isinstance(data, BaseModel):
        data = data.model_dump(mode="json", exclude_unset=True)
    sys.stdout.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode() + "\n")


def _version(shown: bool) -> None:
    if shown:
        from importlib.metadata import version

        sys.stdout.write(f"octel {version('octel')}\n")
        raise typer.Exit()


class _Overrides(TypedDict, total=False):
    """The settings the global options give, over the environment's."""

    data_dir: Path
    database_url: str
    archive_dir: Path


@app.callback()
def _root(
    ctx: typer.Context,
    data_dir: Annotated[Path | None, typer.Option(help="OCTEL_DATA_DIR: folder for data.")] = None,
    database_url: Annotated[str | None, typer.Option(help="OCTEL_DATABASE_URL: the store.")] = None,
    archive_dir: Annotated[Path | None, typer.Option(help="OCTEL_ARCHIVE_DIR: archive files.")] = None,
    _shown: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    from pydantic import ValidationError

    from telemetry.settings import Settings

    overrides: _Overrides = {}
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
    if ctx.obj.data_dir.exists() and not ctx.obj.data_dir.is_dir():
        fail(
            f"the data folder {ctx.obj.data_dir} is a file; give a folder with --data-dir or OCTEL_DATA_DIR",
            2,
        )


def command_group(name: str, help_text: str) -> typer.Typer:
    """The sub-app `name` of `octel`, shared by every module that adds commands to it."""
    for group in app.registered_groups:
        if group.name == name and group.typer_instance is not None:
            return group.typer_instance
    created = typer.Typer(rich_markup_mode=None, help=help_text, no_args_is_help=True)
    app.add_typer(created, name=name)
    return created


def settings_of(ctx: typer.Context) -> Settings:
    from telemetry.settings import Settings

    root = ctx.find_root()
    s = root.obj
    if not isinstance(s, Settings):  # a command called without the root callback (library use)
        s = Settings()
        root.obj = s
    return s


def open_redactor(settings: Settings) -> Redactor:
    """The redactor every stored input passes (the archiver's); a clear error when its key or
    secret file cannot be used."""
    from archiver.redact import RedactKeyError
    from telemetry.archiving import redactor_for

    try:
        return redactor_for(settings)
    except RedactKeyError as e:
        fail(str(e), 2)
    except OSError as e:
        fail(f"cannot read the redaction key or secret values: {e}", 2)


@contextmanager
def open_store(settings: Settings, *, migrate: bool = True) -> Iterator[Engine]:
    """An engine on the configured store, upgraded to the current schema; a clear error if unreachable."""
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError

    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade

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
