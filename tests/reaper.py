"""Servers the tests start die with the test run, even when pytest itself is killed.

`start()` (once, from the suite's conftest) launches this file as a small watchdog process of
its own session. Each harness that starts a long-lived server `adopt`s it (its pid, or its
process group) and `release`s it once stopped; the list is a file named by
`OCTEL_TEST_REAPER_FILE`, so test subprocesses that start servers adopt them too. When the
pytest process is gone the watchdog stops every server still adopted: SIGTERM, then SIGKILL.
Only processes the tests started are ever signalled, by pid: never by name.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

ENV = "OCTEL_TEST_REAPER_FILE"


def start() -> int | None:
    """Start the watchdog for this process (not again in a test subprocess that inherits it)."""
    if os.environ.get(ENV):
        return None
    fd, path = tempfile.mkstemp(prefix="octel-test-reaper-", suffix=".txt")
    os.close(fd)
    os.environ[ENV] = path
    # posix_spawn, not Popen: the watchdog outlives this process by design, and a Popen object
    # still running at exit is a ResourceWarning (an error in this suite)
    quiet = [(os.POSIX_SPAWN_OPEN, n, os.devnull, os.O_RDWR, 0) for n in (0, 1, 2)]
    return os.posix_spawn(
        sys.executable,
        [sys.executable, __file__, str(os.getpid()), path],
        dict(os.environ),
        file_actions=quiet,
        setsid=True,  # a Ctrl-C or a kill of pytest's group must not reach it
    )


def _note(line: str) -> None:
    path = os.environ.get(ENV)
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


def adopt(pid: int, *, group: bool = False) -> None:
    """Stop `pid` (its whole process group when `group`) if the test run dies first."""
    _note(f"{'g' if group else 'p'} {pid}")


def release(pid: int) -> None:
    """`pid` was stopped by its harness: never signal it (its pid may be reused)."""
    _note(f"- {pid}")


def _adopted(path: Path) -> dict[int, bool]:
    out: dict[int, bool] = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            kind, _, pid = line.partition(" ")
            if pid.isdigit():
                if kind == "-":
                    out.pop(int(pid), None)
                else:
                    out[int(pid)] = kind == "g"
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a killed process its parent has not reaped yet is gone for our purpose
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _signal(pid: int, group: bool, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _watch(parent: int, path: Path) -> None:
    while _alive(parent):
        time.sleep(0.5)
    left = _adopted(path)
    for pid, group in left.items():
        _signal(pid, group, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(p) for p in left):
        time.sleep(0.2)
    for pid, group in left.items():
        if _alive(pid):
            _signal(pid, group, signal.SIGKILL)
    with contextlib.suppress(OSError):
        path.unlink()


if __name__ == "__main__":
    _watch(int(sys.argv[1]), Path(sys.argv[2]))
