"""A real Alertmanager (Debian's `prometheus-alertmanager`) on loopback for tests: free ports,
clustering off, a scratch storage folder, its one receiver a webhook pointed where the test
says, grouped by tree with short waits; stopped by pid (SIGTERM, then SIGKILL)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import reaper
import yaml
from realparts import free_port, require, stop_group, which

__all__ = ["HOW", "alertmanager"]

HOW = "apt-get install prometheus-alertmanager (the binary is prometheus-alertmanager or alertmanager)"


def _config(webhook: str, group_wait: str) -> dict[str, object]:
    return {
        "route": {
            "receiver": "capture",
            "group_by": ["tree"],
            "group_wait": group_wait,
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [{"name": "capture", "webhook_configs": [{"url": webhook, "send_resolved": True}]}],
    }


@contextmanager
def alertmanager(tmp: Path, webhook: str, *, group_wait: str = "1s") -> Iterator[str]:
    """Alertmanager's base URL while the block runs."""
    exe = which("prometheus-alertmanager", "alertmanager")
    require(exe is not None, "alertmanager", HOW)
    assert exe is not None
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "alertmanager.yml").write_text(yaml.safe_dump(_config(webhook, group_wait)))
    port = free_port()
    cmd = [
        exe,
        f"--config.file={tmp / 'alertmanager.yml'}",
        f"--storage.path={tmp / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",  # no gossip: one instance, no port beyond the one we chose
        "--log.level=warn",
    ]
    log = (tmp / "alertmanager.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=tmp, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    reaper.adopt(proc.pid, group=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/-/ready", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(
                    f"alertmanager did not start: {(tmp / 'alertmanager.log').read_text()[-2000:]}"
                )
            time.sleep(0.1)
        yield url
    finally:
        stop_group(proc)
        log.close()
