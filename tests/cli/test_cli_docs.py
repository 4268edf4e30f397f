"""docs/cli.md documents every query, run, import, prune, doctor and serve command and each of its options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer

from cli import app

DOC = Path(__file__).parent.parent.parent / "docs" / "cli.md"
COMMANDS = [
    "sessions list",
    "sessions show",
    "sessions tree",
    "cycles list",
    "cycles summary",
    "costs",
    "why",
    "runs add",
    "runs list",
    "import dispatch-db",
    "prune",
    "doctor",
    "export otel",
    "archives export",
    "serve",
    "actions list",
    "janitor",
    "search",
    "db reindex",
]


def _sections() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(r"^### `octel ([a-z -]+?)(?: [A-Z\[].*)?`\s*$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _command(path: str) -> Any:
    cmd: Any = typer.main.get_command(app)
    for name in path.split():
        found = getattr(cmd, "commands", {}).get(name)
        assert found is not None, f"octel {path} is not registered"
        cmd = found
    return cmd


@pytest.mark.parametrize("path", COMMANDS)
def test_every_option_is_documented(path: str) -> None:
    section = _sections().get(path)
    assert section is not None, f"docs/cli.md has no '### `octel {path}`' section"
    for param in _command(path).params:
        if param.param_type_name == "option" and param.opts[0] != "--help":
            documented = any(opt in section for opt in [*param.opts, *param.secondary_opts])
            assert documented, f"octel {path}: {param.opts[0]} is not in docs/cli.md"
