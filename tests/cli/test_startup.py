"""`octel --help` imports none of the heavy parts, and each command only what it uses (what is
imported is behaviour; how long it takes is measured in benchmarks/bench_startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

import cli

HEAVY = ("fastapi", "sqlalchemy", "sqlmodel", "archiver", "rich", "pydantic_settings", "httpx", "uvicorn")


def _modules_of(data: Path | None, *argv: str) -> set[str]:
    code = (
        "import json, sys\n"
        "import cli\n"
        "try:\n"
        f"    cli.main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "OCTEL_DATA_DIR": str(data)} if data else None
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(r.stderr.strip().splitlines()[-1]))


def _upgraded(tmp_path: Path) -> Path:
    """A store at the newest schema (what every command after the first one meets)."""
    env = {**os.environ, "OCTEL_DATA_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "cli", "db", "upgrade"], capture_output=True, check=True, env=env)
    return tmp_path


def _imported_by(*argv: str, data: Path | None = None) -> set[str]:
    return {m.split(".")[0] for m in _modules_of(data, *argv)}


def test_the_session_list_does_not_load_the_live_view(tmp_path: Path) -> None:
    loaded = _modules_of(_upgraded(tmp_path), "sessions", "list", "--json")
    live = ("telemetry.queries.live", "cli.live", "telemetry.store.live", "cli.session_view")
    assert "telemetry.queries.sessions" in loaded
    assert not {m for m in loaded if m.startswith(live)}


def test_the_session_list_defines_only_the_table_it_reads(tmp_path: Path) -> None:
    """The list reads the session index: no other table, no detector, no tower, no search, and
    no PostgreSQL dialect on SQLite."""
    loaded = _modules_of(_upgraded(tmp_path), "sessions", "list", "--json")
    assert "telemetry.store.session_index" in loaded
    unused = {
        "telemetry.store.models",
        "telemetry.store.live_models",
        "telemetry.queries.cycles",
        "telemetry.queries.session_search",
        "detectors.base",
        "detectors.doom_loop",
        "tower.actions",
        "sqlalchemy.dialects.postgresql",  # on a SQLite store
    }
    assert not loaded & unused, sorted(loaded & unused)
    assert not {m for m in loaded if m.startswith(("tower.", "web.", "fastapi", "uvicorn"))}


def test_help_imports_nothing_heavy() -> None:
    loaded = _imported_by("--help")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize(
    ("argv", "absent"),
    [
        (("cycles", "--help"), ("fastapi", "uvicorn")),
        (("doctor", "--help"), ("fastapi", "uvicorn")),
        # the list a dispatcher runs per cycle: no web, no live model, no migrations, no rich
        (("sessions", "list", "--json"), ("fastapi", "uvicorn", "web", "alembic", "httpx", "rich")),
        # the other query commands answering in JSON: no rich, no tower, no live view
        (("runs", "list", "--json"), ("web", "httpx", "rich", "tower", "detectors")),
        (("cycles", "list", "--json"), ("web", "httpx", "rich", "tower", "detectors")),
        (("cycles", "summary", "--json"), ("web", "httpx", "rich", "tower", "detectors")),
        (("costs", "--json"), ("web", "httpx", "rich", "tower", "detectors")),
        (("lost", "--json"), ("web", "httpx", "rich", "tower")),
        (("actions", "list", "--json"), ("web", "httpx", "rich", "tower")),
        (("sessions", "list", "--live", "--json"), ("web", "httpx", "rich", "fastapi")),
    ],
)
def test_a_command_pays_only_for_what_it_uses(
    argv: tuple[str, ...], absent: tuple[str, ...], tmp_path: Path
) -> None:
    loaded = _imported_by(*argv, data=_upgraded(tmp_path))
    assert not loaded & set(absent), sorted(loaded & set(absent))


def test_the_help_line_of_every_command_is_its_own() -> None:
    """`octel --help` shows COMMANDS' lines without importing the commands: they must agree."""
    group = __import__("typer").main.get_command(cli.app)
    assert set(group.commands) == set(cli.COMMANDS)  # type: ignore[attr-defined]
    for name, cmd in group.commands.items():  # type: ignore[attr-defined]
        ours = click.Command(name, help=cli.COMMANDS[name][1]).get_short_help_str(45)
        assert cmd.get_short_help_str(45) == ours, name


def test_the_command_is_found_after_the_root_options() -> None:
    assert cli.command_in(["--data-dir", "x", "--database-url=sqlite://", "why", "ses_1"]) == "why"
    assert cli.command_in(["--help"]) is None


def test_root_options_may_follow_the_command() -> None:
    assert cli.root_options_first(["sessions", "list", "--data-dir", "x", "--database-url=y"]) == [
        "--data-dir",
        "x",
        "--database-url=y",
        "sessions",
        "list",
    ]


def test_version_and_short_help() -> None:
    code = "import cli\ncli.main(%r)"
    for argv, says in ((["--version"], "octel "), (["-h"], "Usage: octel"), (["sessions", "-h"], "list")):
        r = subprocess.run([sys.executable, "-c", code % argv], capture_output=True, text=True, check=False)
        assert r.returncode == 0 and says in r.stdout, (argv, r.stderr)


def test_a_data_folder_that_is_a_file_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    r = subprocess.run(
        [sys.executable, "-m", "cli", "sessions", "list", "--data-dir", str(tmp_path / "f")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 2 and "Errno" not in r.stderr
    assert "is a file" in r.stderr and "--data-dir" in r.stderr


def test_help_lists_commands_in_the_order_of_use() -> None:
    from cli.app import ORDER

    assert set(ORDER) == set(cli.COMMANDS)
    r = subprocess.run([sys.executable, "-m", "cli", "--help"], capture_output=True, text=True, check=True)
    listed = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == list(ORDER)


def test_every_command_module_imports_on_its_own() -> None:
    """A library user may import any `cli` module first (`import cli.queries`): none may depend
    on another having been imported before it (a circular import would fail here)."""
    names = sorted(
        p.stem for p in Path(cli.__file__).parent.glob("*.py") if p.stem not in {"__init__", "__main__"}
    )
    code = (
        "import importlib, sys\n"
        "failed = []\n"
        f"for name in {names!r}:\n"
        "    for m in [m for m in sys.modules if m == 'cli' or m.startswith('cli.')]:\n"
        "        del sys.modules[m]\n"
        "    try:\n"
        "        importlib.import_module('cli.' + name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'cli.{name}: {type(exc).__name__}: {exc}')\n"
        "print('\\n'.join(failed))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert len(names) > 20
    assert r.stdout.strip() == ""


def test_a_claude_import_piped_loads_no_http_client_nor_rich(tmp_path: Path) -> None:
    """`octel import claude DIR --json` reads files: no HTTP client, no progress bar to load."""
    run = sorted((Path(__file__).parents[1] / "fixtures" / "claude").iterdir())[0]
    loaded = _imported_by("import", "claude", str(run / "json"), "--json", data=tmp_path)
    assert "archiver" in loaded  # it did import
    assert not loaded & {"httpx", "rich", "web", "fastapi"}, sorted(
        loaded & {"httpx", "rich", "web", "fastapi"}
    )
