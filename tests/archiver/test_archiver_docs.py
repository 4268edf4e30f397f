"""docs/archiver.md names every option of the archiver's commands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from cli import app

DOC = Path(__file__).parents[2] / "docs" / "archiver.md"


def _command(path: str) -> Any:
    cmd: Any = typer.main.get_command(app)
    for name in path.split():
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", ["archive", "watch", "import archives"])
def test_every_option_is_documented(path: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert f"octel {path}" in text
    for param in _command(path).params:
        if param.param_type_name == "option" and param.opts[0] != "--help":
            assert any(f"[{opt}" in text or f"`{opt}" in text for opt in param.opts), (
                f"octel {path}: {param.opts[0]} is not in docs/archiver.md"
            )


def test_every_redaction_rule_is_documented() -> None:
    from archiver.rules import builtin_rules

    text = DOC.read_text(encoding="utf-8")
    for name in {r.name for r in builtin_rules()} | {"configured"}:
        assert f"| `{name}`" in text or f", `{name}` |" in text, f"rule {name} is not in docs/archiver.md"
