"""A migrated store in memory, for property tests that build a fresh store per example.

Running every migration took 0.2-0.4 s of CPU per store, for each of the hundreds of examples
that want one. Each test process migrates one store in memory with the real `upgrade`, keeps it
as the template, and every later store is a copy of it by SQLite's backup API; the `upgrade`
then run on the copy is the one-query check (as `tests/store_templates.py` does for files).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from sqlalchemy.engine import Engine

from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

__all__ = ["memory_store"]

_template: sqlite3.Connection | None = None


def _head() -> sqlite3.Connection:
    global _template
    if _template is None:
        engine = make_engine("sqlite://")
        upgrade(engine)
        raw = engine.raw_connection()
        try:
            held = sqlite3.connect(":memory:", check_same_thread=False)
            raw.driver_connection.backup(held)  # type: ignore[union-attr]
        finally:
            raw.close()
            engine.dispose()
        _template = held
    return _template


@contextlib.contextmanager
def memory_store() -> Iterator[Engine]:
    """An in-memory SQLite store at the newest schema, disposed of on exit."""
    engine = make_engine("sqlite://")
    raw = engine.raw_connection()  # the pool keeps this thread's one connection: the store
    try:
        _head().backup(raw.driver_connection)  # type: ignore[arg-type]
    finally:
        raw.close()
    upgrade(engine)  # at head already: the one-query check
    try:
        yield engine
    finally:
        engine.dispose()
