"""`octel watch` as a process of its own on a test's store, for the tests that `kill -9` one:
start it under a short lease, stop it by SIGTERM (by pid), and read who holds the lease."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import select

from telemetry.store.action_models import WatchLease
from telemetry.store.db import session_scope

__all__ = ["ROOT", "holder", "stop_watch", "watch_process"]

ROOT = Path(__file__).resolve().parents[2]


def watch_process(
    url: str, db_url: str, data: Path, log: Path, *extra: str, lease: float
) -> subprocess.Popen[bytes]:
    """`octel watch --server url --poll-interval 0.5 *extra` on ``db_url`` and ``data`` under a
    lease of ``lease`` seconds; what it says goes to the end of ``log``."""
    env = {
        **os.environ,
        "OCTEL_DATABASE_URL": db_url,
        "OCTEL_DATA_DIR": str(data),
        "OCTEL_WATCH_LEASE_SECONDS": str(lease),
        "COLUMNS": "300",
    }
    cmd = [sys.executable, "-m", "cli", "watch", "--server", url, "--poll-interval", "0.5", *extra]
    with log.open("ab") as out:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out)


def stop_watch(p: subprocess.Popen[bytes]) -> int | None:
    """SIGTERM, then SIGKILL after 20 s; the exit code (None when it had to be killed)."""
    if p.poll() is not None:
        return p.returncode
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(20)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait(5)
        return None


def holder(engine: Engine) -> str:
    """Who holds the server's lease now ("" when nobody ever did)."""
    with session_scope(engine, write=False) as db:
        row = db.exec(select(WatchLease)).first()
        return row.holder if row else ""
