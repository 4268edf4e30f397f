"""A live `octel serve` in a subprocess on a free loopback port, for tests that need real HTTP."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx
import reaper
from realparts import free_port

__all__ = ["OctelProcess", "live_octel"]


class OctelProcess:
    """One `octel serve` on a fixed port and data folder that a test can kill and start again."""

    def __init__(
        self,
        data_dir: Path,
        database_url: str | None = None,
        token: str = "test-token-0123456789",
        extra_env: dict[str, str] | None = None,
        serve_args: Sequence[str] = (),
    ) -> None:
        self.serve_args = list(serve_args)
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "OCTEL_DATA_DIR": str(data_dir),
            "OCTEL_INGEST_TOKEN": token,
            "OCTEL_HOST": "127.0.0.1",
            "OCTEL_PORT": str(self.port),
            **(extra_env or {}),
        }
        if database_url:
            self.env["OCTEL_DATABASE_URL"] = database_url
        self.log_path = data_dir.parent / f"octel-serve-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers (any answer: reads may need a token)."""
        self._log = open(self.log_path, "ab")  # noqa: SIM115
        proc = self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli", "serve", *self.serve_args],
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        reaper.adopt(proc.pid, group=True)
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"octel serve exited with {proc.returncode}; see {self.log_path}")
            try:
                if httpx.get(f"{self.base}/api/health", timeout=2).status_code in (200, 401):
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"octel serve did not answer within 60 s; see {self.log_path}")
            time.sleep(0.1)

    def kill9(self) -> None:
        """SIGKILL the server and everything it started: no shutdown code runs."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            reaper.release(self.proc.pid)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(10)
                self.proc = None
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        self.kill9()


@contextmanager
def live_octel(
    data_dir: Path,
    database_url: str | None = None,
    token: str = "test-token-0123456789",
    extra_env: dict[str, str] | None = None,
    serve_args: Sequence[str] = (),
) -> Iterator[str]:
    """Yield the base URL of a running `octel serve` (`serve_args`: e.g. `--workers 2`); stop it
    (and its children) afterwards."""
    server = OctelProcess(data_dir, database_url, token, extra_env, serve_args)
    try:
        server.start()
        yield server.base
    finally:
        server.stop()
