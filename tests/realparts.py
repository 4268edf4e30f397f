"""Real parts (PostgreSQL, Chromium, Prometheus, opencode) for the test suite.

On a laptop without one of them its tests skip with a reason that says how to get it; under
CI (`OCTEL_REQUIRE_REAL_PARTS=1`, set by `.ci/run`) a missing part fails the test instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from pathlib import Path

import pytest
import reaper


def require(ok: bool, what: str, how: str) -> None:
    """Skip (or, under CI, fail) unless a real part is present."""
    if ok:
        return
    reason = f"{what} not found; {how}"
    if os.environ.get("OCTEL_REQUIRE_REAL_PARTS") == "1":
        pytest.fail(f"real part missing under CI: {reason}")
    pytest.skip(reason)


def which(*names: str, extra_dirs: tuple[str, ...] = ()) -> str | None:
    """First executable among names, on PATH or in extra_dirs."""
    for name in names:
        found = shutil.which(name)
        if found:
            return found
        for d in extra_dirs:
            p = Path(d) / name
            if p.is_file() and os.access(p, os.X_OK):
                return str(p)
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_group(proc: subprocess.Popen[bytes], term_wait: float = 5.0) -> None:
    """Stop a server started in its own process group: SIGTERM, then SIGKILL if it lingers
    (some servers ignore SIGTERM while busy)."""
    try:
        for sig, wait in ((signal.SIGTERM, term_wait), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue
    finally:
        reaper.release(proc.pid)
