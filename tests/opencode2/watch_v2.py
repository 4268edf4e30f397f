"""`watch_server` following servers (the fake OpenCode 2, a real 1.18) into a store of the test's
own, from a thread; and reads of what it stored."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from telemetry.archiving import watch_servers
from telemetry.settings import Settings
from telemetry.store.action_models import WatchAction
from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.lost_models import LostTree
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex
from tower.watch import WatchConfig


@dataclass
class Store:
    settings: Settings
    engine: Engine
    logs: list[str] = field(default_factory=list)

    def live(self, sid: str) -> LiveSession | None:
        with session_scope(self.engine, write=False) as db:
            return db.exec(select(LiveSession).where(LiveSession.session_id == sid)).first()

    def indexed(self) -> dict[str, SessionIndex]:
        with session_scope(self.engine, write=False) as db:
            return {r.session_id: r for r in db.exec(select(SessionIndex))}

    def actions(self) -> list[WatchAction]:
        with session_scope(self.engine, write=False) as db:
            return list(db.exec(select(WatchAction).order_by(WatchAction.id)))  # type: ignore[arg-type]

    def lost(self) -> list[LostTree]:
        with session_scope(self.engine, write=False) as db:
            return list(db.exec(select(LostTree)))


def new_store(data: Path, **settings: Any) -> Store:
    s = Settings(data_dir=data, _env_file=None, **settings)  # type: ignore[call-arg]
    engine = make_engine(s.db_url)
    upgrade(engine)
    return Store(s, engine)


@contextmanager
def watching(store: Store, *urls: str, settle: float = 0.5, **kw: Any) -> Iterator[Store]:
    """`watch_servers` follows ``urls`` into ``store`` until the block ends."""
    stop, loop = asyncio.Event(), asyncio.new_event_loop()
    kw.setdefault("config", WatchConfig(settle_seconds=settle, poll_interval=0.3, mirror_grace_seconds=0.3))
    job = watch_servers(store.settings, stop, list(urls), engine=store.engine, log=store.logs.append, **kw)
    thread = threading.Thread(target=loop.run_until_complete, args=(job,), daemon=True)
    thread.start()
    time.sleep(1.0)  # connected to each event stream
    try:
        yield store
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()


def until(check: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Poll ``check`` until it answers truthy; AssertionError naming ``what`` after ``timeout``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what or check}")
