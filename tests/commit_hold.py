"""Hold a group commit's writer thread, so what is submitted meanwhile forms the next batch."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

from sqlmodel import Session

from telemetry.services.ingest.group_commit import GroupCommit

__all__ = ["hold_commit"]


def hold_commit(g: GroupCommit) -> tuple[threading.Event, Future[Any]]:
    """A first write that holds the commit thread until released: what is submitted meanwhile
    queues, and forms the next batch. Returns the release event and the held write's future."""
    release, started = threading.Event(), threading.Event()

    def hold(db: Session) -> None:
        started.set()
        release.wait(30)

    future = g.submit(hold)
    assert started.wait(30)
    return release, future
