"""The `octel` command line. Command modules register themselves on the app when imported."""

from __future__ import annotations

from cli import (
    archive,  # noqa: F401
    detect,  # noqa: F401
    doctor,  # noqa: F401
    fleet,  # noqa: F401  (after queries: shares its options)
    imports,  # noqa: F401  (after archive: shares its `import` group)
    prune,  # noqa: F401
    queries,  # noqa: F401
    runs,  # noqa: F401
    serve,  # noqa: F401  (command modules)
    watch,  # noqa: F401
    why,  # noqa: F401
)
from cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    app()
