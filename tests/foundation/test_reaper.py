"""A test run killed with SIGKILL leaves no `octel serve` behind: the servers the harnesses
start are stopped by the watchdog when the run's process is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# Stands in for a pytest run: starts the watchdog, then a real `octel serve`, then waits.
_RUN = """
import sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
import reaper, liveserver
reaper.start()
server = liveserver.OctelProcess(Path({data!r}))
server.start()
print(server.proc.pid, flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_killed_run_takes_its_servers_with_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OCTEL_TEST_REAPER_FILE"}
    code = _RUN.format(tests=str(TESTS), data=str(tmp_path / "data"))
    run = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=TESTS.parent, stdout=subprocess.PIPE, text=True
    )
    server = 0
    try:
        assert run.stdout is not None
        server = int(run.stdout.readline())
        assert _alive(server)
        run.send_signal(signal.SIGKILL)  # no finaliser, no fixture teardown runs
        run.wait(10)
        deadline = time.monotonic() + 30
        while _alive(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(server), "octel serve outlived the run that started it"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
        if run.stdout is not None:
            run.stdout.close()
        if server and _alive(server):
            os.killpg(server, signal.SIGKILL)


# Stands in for a pytest-xdist run: the controller starts the watchdog and a worker; the
# worker (the list inherited) adopts itself, as tests/conftest.py has it, then starts a server.
_CONTROLLER = """
import subprocess, sys, time
sys.path.insert(0, {tests!r})
import reaper
reaper.start()
worker = subprocess.Popen([sys.executable, "-c", {worker!r}], stdout=sys.stdout)
time.sleep(600)
"""
_WORKER = """
import os, sys, time
sys.path.insert(0, {tests!r})
from pathlib import Path
import reaper, liveserver
reaper.adopt(os.getpid())
server = liveserver.OctelProcess(Path({data!r}))
server.start()
print(os.getpid(), server.proc.pid, flush=True)
time.sleep(600)
"""


def test_a_killed_parallel_run_takes_its_workers_and_their_servers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OCTEL_TEST_REAPER_FILE"}
    worker_code = _WORKER.format(tests=str(TESTS), data=str(tmp_path / "data"))
    code = _CONTROLLER.format(tests=str(TESTS), worker=worker_code)
    run = subprocess.Popen(
        [sys.executable, "-c", code], env=env, cwd=TESTS.parent, stdout=subprocess.PIPE, text=True
    )
    worker = server = 0
    try:
        assert run.stdout is not None
        worker, server = (int(p) for p in run.stdout.readline().split())
        assert _alive(worker) and _alive(server)
        run.send_signal(signal.SIGKILL)  # the controller only: its worker is not told
        run.wait(10)
        deadline = time.monotonic() + 30
        while (_alive(worker) or _alive(server)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(worker), "a worker outlived the run that started it"
        assert not _alive(server), "octel serve outlived the run whose worker started it"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)
        if run.stdout is not None:
            run.stdout.close()
        for pid, group in ((server, True), (worker, False)):
            if pid and _alive(pid):
                (os.killpg if group else os.kill)(pid, signal.SIGKILL)
