"""A live `octel serve` in a subprocess on a free loopback port, for tests that need real HTTP."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from realparts import free_port

__all__ = ["live_octel"]


@contextmanager
def live_octel(
    data_dir: Path,
    database_url: str | None = None,
    token: str = "test-token-0123456789",
    extra_env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Yield the base URL of a running `octel serve`; stop it (and its children) afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "OCTEL_DATA_DIR": str(data_dir),
        "OCTEL_INGEST_TOKEN": token,
        "OCTEL_HOST": "127.0.0.1",
        "OCTEL_PORT": str(port),
        **(extra_env or {}),
    }
    if database_url:
        env["OCTEL_DATABASE_URL"] = database_url
    log = open(data_dir.parent / f"octel-serve-{port}.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"octel serve exited with {proc.returncode}; see {log.name}")
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"octel serve did not answer within 60 s; see {log.name}")
            time.sleep(0.1)
        yield base
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        log.close()
