"""Project-wide promises: docs match the settings, imports keep their direction, the token is private."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cli import app
from telemetry.settings import Settings, settings_doc
from telemetry.token import ensure_ingest_token

ROOT = Path(__file__).resolve().parents[2]


def test_every_setting_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for name, default, help_text in settings_doc():
        row = f"| `{name}` | {f'`{default}`' if default else ''} | {help_text} |"
        assert row in readme, f"README configuration table lacks or misstates {name}:\n{row}"


def test_the_readme_lists_the_settings_in_declaration_order() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    listed = [line.split("`")[1] for line in readme if line.startswith("| `OCTEL_")]
    assert listed == [name for name, _, _ in settings_doc()]


def test_settings_split_across_modules_is_one_class() -> None:
    from telemetry.settings_core import CoreSettings

    core = list(CoreSettings.model_fields)
    assert list(Settings.model_fields)[: len(core)] == core  # the core settings come first
    s = Settings(data_dir="~/octel", budgets_file="~/budgets.toml", _env_file=None)  # type: ignore[call-arg]
    assert s.data_dir == Path.home() / "octel" and s.budgets_file == Path.home() / "budgets.toml"


def test_readme_starts_with_the_two_setup_commands() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```sh") + 3]
    assert block[0].endswith("octel serve") and "pip install ." in block[0]
    assert block[1].endswith("python -m pytest")
    assert block[1].split("&& ")[-1] in (ROOT / ".ci/run").read_text()


def test_import_layers_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_token_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    os.environ.pop("OCTEL_INGEST_TOKEN", None)
    token, path, created = ensure_ingest_token(s)
    assert created and path is not None and len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ensure_ingest_token(s) == (token, path, False)


def test_db_upgrade_command_and_a_clear_error_on_a_bad_store(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["--data-dir", str(tmp_path), "db", "upgrade"])
    assert ok.exit_code == 0, ok.output
    from telemetry.store.migrate import head_revision

    assert f"store at revision {head_revision()} (head {head_revision()})" in ok.output
    bad = runner.invoke(
        app, ["--database-url", "postgresql+psycopg://nobody@127.0.0.1:1/none", "db", "upgrade"]
    )
    assert bad.exit_code == 1
    assert "cannot use the store" in bad.output and "Traceback" not in bad.output
