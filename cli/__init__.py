"""The `octel` command line, loaded lazily: `octel COMMAND` imports only the module that
defines COMMAND (and what it uses), and `octel --help` imports none of them, so a dispatcher
calling octel per cycle, or a person at a terminal, does not pay for SQLAlchemy, the archiver
or FastAPI on every start.

`COMMANDS` names each command's module and its one-line help (shown by `octel --help`; a test
holds it equal to the command's own help). `from cli import app` still gives the app with
every command (it loads them all the first time its commands are read), for tests and
library use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

from cli.app import app

__all__ = ["COMMANDS", "app", "main", "root_options_first"]

# command -> (modules that define it, the start of its help: what `octel --help` shows of it).
# `import` has subcommands in two modules.
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "archive": (("cli.archive",), "Archive a session tree from OpenCode: every subagent, redacted, …"),
    "watch": (("cli.watch",), "Follow OpenCode servers: keep a live row for every session, …"),
    "detect": (("cli.detect",), "Score sessions with the stuck-agent detectors, or measure the …"),
    "doctor": (("cli.doctor",), "Check that octel can work here and say what to fix; exit 1 if …"),
    "prune": (("cli.prune",), "Remove old archive files, index rows, cycles and Claude runs."),
    "costs": (
        ("cli.queries", "cli.fleet"),
        "Tokens by kind, cost and cache-hit ratio over OpenCode sessions …",
    ),
    "serve": (("cli.serve",), "Run the console, ingestion API and /metrics (upgrades the store …"),
    "why": (("cli.why",), "Why a session or cycle stopped: completed, timed out, loop detected, …"),
    "import": (("cli.archive", "cli.imports", "cli.import_claude"), "Bring existing data into the store."),
    "sessions": (("cli.queries",), "Archived sessions: list, one session, its subagent tree."),
    "cycles": (("cli.queries", "cli.fleet"), "Dispatcher cycles: list and per-driver summary."),
    "runs": (("cli.runs",), "Claude Code CLI runs: record a result, list them."),
    "db": (("cli.serve", "cli.search"), "The store's schema."),
    "search": (("cli.search",), "Find any text any agent said or ran: prompts, answers, …"),
    "export": (("cli.export",), "Send archived data to other tools."),
    "lost": (("cli.lost",), "Session trees octel could not archive in full, newest first: what …"),
    "actions": (("cli.actions",), "What octel watch's rules did to live sessions."),
    "janitor": (("cli.janitor",), "Delete from an OpenCode server the root trees that are idle, …"),
    "asks": (("cli.asks",), "Permission asks live sessions wait on: list, answer."),
    "alerts": (("cli.alerts",), "What alert delivery sent to Alertmanager and webhooks."),
    "archives": (("cli.archive_export",), "Archive documents of the store: write them out as files."),
    "quotas": (("cli.quotas",), "Quota windows per provider or key (monthly with a reset day, or …"),
}
GROUPS = frozenset(
    {"import", "sessions", "cycles", "runs", "db", "export", "actions", "asks", "alerts", "archives"}
)
# a group's subcommand -> the modules that define it, when loading them alone is enough
SUBCOMMANDS: dict[str, dict[str, tuple[str, ...]]] = {
    "import": {
        "claude": ("cli.import_claude",),
        "archives": ("cli.archive",),
        "dispatch-db": ("cli.imports",),
    },
    "archives": {"export": ("cli.archive_export",)},
}
_VALUED = frozenset({"--data-dir", "--database-url", "--archive-dir"})  # root options with a value


def command_in(argv: Sequence[str]) -> str | None:
    """The command named on a command line (after the root options), if any."""
    args = iter(argv)
    for a in args:
        if a in _VALUED:
            next(args, None)
        elif not a.startswith("-"):
            return a
    return None


def _modules_for(name: str, args: Sequence[str]) -> tuple[str, ...]:
    """The modules a command line needs: one subcommand's own, or (for the group's help)
    every module of the group."""
    rest = list(args[list(args).index(name) + 1 :])
    sub = command_in(rest)
    own = SUBCOMMANDS.get(name, {}).get(sub or "")
    return own if own is not None else COMMANDS[name][0]


def _load(modules: Sequence[str]) -> None:
    for m in modules:
        importlib.import_module(m)


def _stubs(root: Any) -> None:
    """Every command as a name and its help only: enough for `octel --help`, nothing imported."""
    import typer

    def nothing() -> None:  # never runs: only help is shown from a stub
        raise typer.Exit(2)

    for name, (_, help_text) in COMMANDS.items():
        if name in GROUPS:
            root.add_typer(typer.Typer(rich_markup_mode=None), name=name, help=help_text)
        else:
            root.command(name, help=help_text)(nothing)


def _load_all() -> None:
    _load(sorted({m for mods, _ in COMMANDS.values() for m in mods}))


app.loader = _load_all


def root_options_first(argv: Sequence[str]) -> list[str]:
    """The command line with the root options (`--data-dir X` …) moved before the command, so
    `octel sessions list --data-dir X` means what `octel --data-dir X sessions list` does (no
    command has options of those names)."""
    front: list[str] = []
    rest: list[str] = []
    args = iter(argv)
    for a in args:
        if a == "--":
            rest += [a, *args]
        elif a in _VALUED:
            front += [a, next(args, "")]
        elif a.split("=", 1)[0] in _VALUED:
            front.append(a)
        else:
            rest.append(a)
    return [*front, *rest]


def main(argv: Sequence[str] | None = None) -> None:
    app.loader = None  # only what this command line names
    args = root_options_first(sys.argv[1:] if argv is None else argv)
    name = command_in(args)
    if name in COMMANDS:
        _load(_modules_for(name, args))
    else:  # no command, root --help, or an unknown one (click names it)
        _stubs(app)
    app(args, prog_name="octel")
