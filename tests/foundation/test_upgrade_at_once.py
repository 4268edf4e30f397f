"""Processes that open a new SQLite store at the same moment (`octel serve` and `octel watch`
started together on a fresh data folder) all get it upgraded: the later ones wait for the first
one's migration instead of failing with "database is locked"."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from telemetry.store.db import make_engine
from telemetry.store.migrate import at_head

ROOT = Path(__file__).resolve().parents[2]

# each process says it is ready, then waits for the start file: all upgrade together
_UPGRADE = """
import sys, time
from pathlib import Path
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
engine = make_engine(sys.argv[1])
Path(sys.argv[3]).touch()
while not Path(sys.argv[2]).exists():
    time.sleep(0.005)
upgrade(engine)
"""


def test_four_processes_upgrading_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    url, go = f"sqlite:///{tmp_path / 'data' / 'octel.db'}", tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(4)]
    cmd = [sys.executable, "-c", _UPGRADE, url, str(go)]
    procs = [subprocess.Popen([*cmd, str(r)], cwd=ROOT, stderr=subprocess.PIPE, text=True) for r in ready]
    try:
        while not all(r.exists() or p.poll() is not None for r, p in zip(ready, procs, strict=True)):
            time.sleep(0.05)
        go.touch()
        errors = [p.communicate(timeout=120)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0, 0, 0, 0], "\n".join(e[-600:] for e in errors)
    engine = make_engine(url)
    try:
        assert at_head(engine)
    finally:
        engine.dispose()
