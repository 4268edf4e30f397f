"""Help says what a user types: schema versions read, metavars without typer's brackets or types."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli import app

HELPS = [("import", "archives"), ("import", "claude"), ("detect",), ("serve",), ("watch",)]


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_help_has_no_raw_types_or_double_brackets(argv: tuple[str, ...]) -> None:
    out = CliRunner().invoke(app, [*argv, "--help"]).stdout
    assert "[[" not in out and "<list[" not in out, out


def test_import_archives_says_every_schema_it_reads() -> None:
    out = " ".join(CliRunner().invoke(app, ["import", "archives", "--help"]).stdout.split())
    assert "schema v1-v4" in out and "exports, run logs and event captures" in out


def test_serve_help_says_what_host_and_port_are() -> None:
    out = " ".join(CliRunner().invoke(app, ["serve", "--help"]).stdout.split())
    assert "Address to listen on" in out and "TCP port to listen on" in out


def test_an_unknown_threshold_lists_the_valid_names() -> None:
    r = CliRunner().invoke(app, ["detect", "x.json", "-t", "bogus=1"])
    assert r.exit_code == 2 and "doom_repeat_stuck" in r.stderr and "docs/" not in r.stderr
