"""A following watcher's journal of the sessions it has just heard of: one line each (session,
root), appended to a file in its mirror folder the moment the stream brings one, before its live
rows are written to the store, and emptied once they are. A file append never waits: the store
may (SQLite lets one writer at a time, and an archive's transaction can hold it for a second),
and a watcher killed with `kill -9` meanwhile would leave no trace of the session. The watcher
that takes over reads the dead one's journal with its live rows
(``telemetry.tower.takeover_lost``)."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterable
from pathlib import Path

import orjson

__all__ = ["JOURNAL", "Journal", "dead_journal", "read_journal"]

JOURNAL = "seen.log"  # no session's spill file ends so (they are <id>.jsonl)


class Journal:
    """Appends to ``path`` (None: kept nowhere); ``clear`` once the store holds what it says."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.lines = 0

    def add(self, pairs: Iterable[tuple[str, str]]) -> None:
        """(session, root) pairs, in one write; never raises (the store is the record)."""
        data = b"".join(orjson.dumps({"s": s, "r": r}) + b"\n" for s, r in pairs)
        if self.path is None or not data:
            return
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            self.lines += data.count(b"\n")

    def clear(self) -> None:
        if self.path is None or not self.lines:
            return
        with contextlib.suppress(OSError):
            os.truncate(self.path, 0)
            self.lines = 0


def read_journal(path: Path) -> dict[str, list[str]]:
    """The trees (root: its sessions) a journal names; {} when there is none."""
    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    out: dict[str, list[str]] = {}
    for line in raw.splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):  # a line cut by the kill
            got = orjson.loads(line)
            s, r = (got.get("s"), got.get("r")) if isinstance(got, dict) else (None, None)
            if isinstance(s, str) and isinstance(r, str):
                out.setdefault(r, []).append(s)
    return out


def dead_journal(own_mirror: Path | None, holder: str | None) -> Path | None:
    """The journal of the watcher ``holder`` names (host:pid:tail), beside this one's mirror
    folder (``…/<server>/<pid>``); None when it ran on another host or there is no folder."""
    if own_mirror is None or holder is None:
        return None
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return own_mirror.parent / pid / JOURNAL
