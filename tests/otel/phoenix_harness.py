"""A real Arize Phoenix on loopback, started from its own virtual environment.

Phoenix pins many packages, so it lives in a venv of its own (`$OCTEL_PHOENIX_VENV`, default
`~/.cache/octel-test/phoenix/venv`; `.ci/run` creates it). Each server gets free HTTP and gRPC
ports, a scratch working folder (its SQLite database), telemetry off and no external resources,
and is stopped by its process group when the test is done.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import reaper
from realparts import free_port, stop_group

__all__ = ["HOW", "phoenix_binary", "phoenix_server"]

HOW = (
    "install Arize Phoenix in a venv of its own: python3 -m venv ~/.cache/octel-test/phoenix/venv && "
    "~/.cache/octel-test/phoenix/venv/bin/pip install arize-phoenix (or point $OCTEL_PHOENIX_VENV at one); "
    ".ci/run does this"
)


def phoenix_binary() -> Path | None:
    default = Path.home() / ".cache" / "octel-test" / "phoenix" / "venv"
    binary = Path(os.environ.get("OCTEL_PHOENIX_VENV") or default) / "bin" / "phoenix"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


@contextmanager
def phoenix_server(binary: Path, workdir: Path, start_timeout: float = 240.0) -> Iterator[str]:
    """Phoenix's base URL (OTLP/HTTP at `/v1/traces`, REST at `/v1/…`, the UI at `/`)."""
    port, grpc = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHOENIX_", "OTEL_"))}
    env |= {
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = workdir / "phoenix.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(binary), "serve"],
            env=env,
            cwd=workdir,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    reaper.adopt(proc.pid, group=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"phoenix exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"phoenix did not answer in {start_timeout} s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        stop_group(proc, term_wait=10.0)
