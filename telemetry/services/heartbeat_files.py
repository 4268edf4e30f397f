"""Heartbeat files: a file's mtime is the beat, for dispatchers that already write them.

A file may hold a pid, or JSON with `pid` and `cycle_id`; anything else is just a beat.
"""

from __future__ import annotations

import glob
import json
import os
import socket
from datetime import UTC, datetime

from sqlmodel import Session

from telemetry.services.ingest import HeartbeatIn, heartbeat

__all__ = ["read_beat", "refresh_heartbeat_files"]

_MAX_READ = 4096


def read_beat(path: str) -> tuple[datetime, int | None, str | None]:
    """(mtime, pid, cycle id) of one heartbeat file."""
    mtime = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
    pid: int | None = None
    cycle: str | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(_MAX_READ).strip()
    except OSError:
        return mtime, None, None
    if text.isdigit():
        pid = int(text)
    else:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            p, c = doc.get("pid"), doc.get("cycle_id") or doc.get("in_flight_cycle_id")
            pid = p if isinstance(p, int) and not isinstance(p, bool) and p > 0 else None
            cycle = str(c)[:200] if c else None
    return mtime, pid, cycle


def refresh_heartbeat_files(db: Session, globs: list[tuple[str, str]], now: datetime) -> int:
    """Turn every matching file into a heartbeat of its driver on this host; returns files read."""
    host = socket.gethostname()
    seen = 0
    for driver, pattern in globs:
        newest: tuple[datetime, int | None, str | None] | None = None
        for path in glob.glob(os.path.expanduser(pattern)):
            try:
                beat = read_beat(path)
            except OSError:
                continue  # removed between glob and stat
            seen += 1
            if newest is None or beat[0] > newest[0]:
                newest = beat
        if newest is not None:
            at, pid, cycle = newest
            heartbeat(
                db,
                HeartbeatIn(driver=driver, host=host, pid=pid, in_flight_cycle_id=cycle, at=min(at, now)),
                now,
                source="file",
            )
    return seen
