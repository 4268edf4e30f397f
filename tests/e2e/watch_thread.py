"""A store of a test's own and `watch_server` following a real `opencode serve` into it from a
thread: what the ``octel_store`` and ``watch`` fixtures of tests/e2e/conftest.py give."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine

from telemetry.archiving import watch_server
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
from tower.watch import WatchConfig

__all__ = ["Store", "Watch", "new_store", "watching"]


@dataclass
class Store:
    """SQLite and the archive folder under one data folder; ``logs`` gathers what a watcher
    of it says."""

    settings: Settings
    engine: Engine
    logs: list[str] = field(default_factory=list)


# `with watch(**kw) as store:` (the `watch` fixture)
Watch = Callable[..., AbstractContextManager[Store]]


def new_store(data: Path) -> Store:
    settings = Settings(data_dir=data, _env_file=None)  # type: ignore[call-arg]
    engine = make_engine(settings.db_url)
    upgrade(engine)
    return Store(settings, engine)


@contextmanager
def watching(store: Store, url: str, *, settle: float = 1.0, **kw: Any) -> Iterator[Store]:
    """`watch_server` follows ``url`` into ``store`` until the block ends; keywords go to it
    (``rules``, ``lease_seconds``, ``label``, ``config``: by default a settle delay of
    ``settle`` and a poll every 0.5 s)."""
    stop, loop = asyncio.Event(), asyncio.new_event_loop()
    kw.setdefault("config", WatchConfig(settle_seconds=settle, poll_interval=0.5))
    job = watch_server(store.settings, stop, engine=store.engine, server_url=url, log=store.logs.append, **kw)
    thread = threading.Thread(target=loop.run_until_complete, args=(job,), daemon=True)
    thread.start()
    time.sleep(1.0)  # let the watcher take its lease (if it has one) and connect to /event
    try:
        yield store
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()
