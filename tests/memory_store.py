"""A migrated store in memory, for property tests that build a fresh store per example."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sqlalchemy.engine import Engine

from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

__all__ = ["memory_store"]


@contextlib.contextmanager
def memory_store() -> Iterator[Engine]:
    """An in-memory SQLite store at the newest schema, disposed of on exit."""
    engine = make_engine("sqlite://")
    upgrade(engine)
    try:
        yield engine
    finally:
        engine.dispose()
