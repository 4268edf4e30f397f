"""Heartbeat files: a file's mtime is the beat, for dispatchers that already write them.

A file may hold a pid, or JSON with `pid` and `cycle_id`; anything else is just a beat.
"""

from __future__ import annotations

import glob
import json
import logging
import os
import socket
from datetime import UTC, datetime

from pydantic import ValidationError
from sqlmodel import Session

from archiver.bounds import INT32_MAX
from archiver.redact import Redactor
from telemetry.services.ingest.ingest import HeartbeatIn, heartbeat

__all__ = ["read_beat", "refresh_heartbeat_files"]

log = logging.getLogger(__name__)

_MAX_READ = 4096


def _pid(v: object) -> int | None:
    # a pid_t: what no process can have (0, negative, past 32 bits) is no pid
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= INT32_MAX else None


def read_beat(path: str) -> tuple[datetime, int | None, str | None]:
    """(mtime, pid, cycle id) of one heartbeat file; OSError or ValueError when it cannot be read."""
    mtime = datetime.fromtimestamp(os.stat(path).st_mtime, UTC)
    pid: int | None = None
    cycle: str | None = None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read(_MAX_READ).strip()
    except OSError:
        return mtime, None, None
    if text.isascii() and text.isdigit():
        pid = _pid(int(text))
    else:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            p, c = doc.get("pid"), doc.get("cycle_id") or doc.get("in_flight_cycle_id")
            pid = _pid(p)
            cycle = str(c).replace("\x00", "") or None if c else None  # cut once redacted
    return mtime, pid, cycle


def refresh_heartbeat_files(
    db: Session, globs: list[tuple[str, str]], now: datetime, *, redactor: Redactor
) -> int:
    """Turn every matching file into a heartbeat of its driver on this host; returns files read."""
    host = socket.gethostname()
    seen = 0
    for driver, pattern in globs:
        newest: tuple[datetime, int | None, str | None] | None = None
        for path in glob.glob(os.path.expanduser(pattern)):
            try:
                beat = read_beat(path)
            except (OSError, ValueError, OverflowError):
                continue  # removed between glob and stat, or an mtime no clock can show
            seen += 1
            if newest is None or beat[0] > newest[0]:
                newest = beat
        if newest is not None:
            at, pid, cycle = newest
            cycle = redactor.cut(cycle, 200) if cycle else None  # redact, then cut to the field
            try:
                beat_in = HeartbeatIn(
                    driver=driver, host=host, pid=pid, in_flight_cycle_id=cycle, at=min(at, now)
                )
            except ValidationError as e:  # a bad file never breaks the health it feeds
                log.warning("octel: heartbeat files of %s skipped: %s", driver, e.errors()[0]["msg"])
                continue
            heartbeat(db, beat_in, now, redactor=redactor, source="file")
    return seen
