"""Run `octel` against a given store through typer's CliRunner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import Result
from sqlalchemy.engine import Engine
from typer.testing import CliRunner

from cli import app

__all__ = ["Octel"]


@dataclass
class Octel:
    data_dir: Path
    url: str
    engine: Engine
    runner: CliRunner

    def __call__(self, *args: str, input: str | None = None) -> Result:
        base = ["--data-dir", str(self.data_dir), "--database-url", self.url]
        return self.runner.invoke(app, [*base, *args], input=input, catch_exceptions=False)

    def json(self, *args: str, input: str | None = None, code: int = 0) -> Any:
        r = self(*args, "--json", input=input)
        assert r.exit_code == code, r.output + r.stderr
        return json.loads(r.stdout)
