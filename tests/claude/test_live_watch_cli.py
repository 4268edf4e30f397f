"""`octel watch --claude-dir` alone (no OpenCode server): the sessions running are on the live
board, and a budget is checked against their spend so far, alert only (the CLI cannot be
stopped from outside), with `--claude-cli off` (the transcripts alone)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from claude_lines import FIXTURES
from typer.testing import CliRunner

from cli import app


def test_watch_claude_dir_alone_shows_live_rows_and_alerts_the_budget(tmp_path: Path) -> None:
    cfg = tmp_path / "claude"
    shutil.copytree(FIXTURES / "b_bash_tool" / "json", cfg)
    for f in cfg.rglob("*"):  # fresh: written now (a copy keeps the checkout's times)
        os.utime(f)
    data = ["--data-dir", str(tmp_path / "data")]
    env = {"OCTEL_BUDGET_TREE_USD": "0.01", "COLUMNS": "300"}
    cmd = [*data, "watch", "--claude-dir", str(cfg), "--claude-cli", "off", "--poll-interval", "0.2"]
    r = CliRunner().invoke(app, [*cmd, "--for", "2", "--json"], env=env)
    assert r.exit_code == 0, r.output
    assert "alert only: Claude Code cannot be stopped from outside" in r.stderr
    said = [ln for ln in r.stderr.splitlines() if "alert budget critical" in ln]
    assert said and "Claude Code cannot be stopped from outside: stop it by hand" in said[0], r.stderr
    changes = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    assert [(c["source"], c["state"]) for c in changes] == [("claude_code", "idle")]
    page = json.loads(CliRunner().invoke(app, [*data, "sessions", "list", "--live", "--json"]).stdout)
    (row,) = page["items"]
    assert row["state"] == "unknown" and row["cost_usd"] > 0.01  # its watcher stopped


def test_a_claude_cli_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "claude").mkdir()
    args = ["--data-dir", str(tmp_path / "d"), "watch", "--claude-dir", str(tmp_path / "claude")]
    r = CliRunner().invoke(app, [*args, "--claude-cli", str(tmp_path / "nope"), "--for", "1"])
    assert r.exit_code == 2 and "--claude-cli" in r.stderr and "not an executable" in r.stderr
