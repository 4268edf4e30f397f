"""The `octel` command line. Command modules register themselves on the app when imported."""

from __future__ import annotations

from telemetry.cli import serve  # noqa: F401  (command modules)
from telemetry.cli import queries  # noqa: F401
from telemetry.cli import runs  # noqa: F401
from telemetry.cli import why  # noqa: F401
from telemetry.cli import detect  # noqa: F401
from telemetry.cli import archive  # noqa: F401
from telemetry.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
