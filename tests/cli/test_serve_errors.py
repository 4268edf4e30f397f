"""`octel serve` on a port another program holds: one sentence naming the port and `--port`."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path


def test_a_busy_port_is_one_sentence(tmp_path: Path) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "OCTEL_DATA_DIR": str(tmp_path / "data")}
        r = subprocess.run(
            [sys.executable, "-m", "cli", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    assert r.returncode != 0
    assert "serving on" not in r.stdout and "Traceback" not in r.stderr and "Errno" not in r.stderr
    [line] = [x for x in r.stderr.splitlines() if x.strip()]
    assert str(port) in line and "--port" in line
