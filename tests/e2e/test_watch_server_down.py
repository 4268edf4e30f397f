"""`octel watch` on a server that is down: a real loopback port that refuses, then a real
`opencode serve` started on that very port. The watcher says it once in one sentence (no
class names), retries quietly with backoff, and says one line when the server is back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from driver import wait_for
from fakellm import FakeLLM
from opencode_harness import opencode_server
from realparts import free_port

pytestmark = [pytest.mark.opencode]

ROOT = Path(__file__).resolve().parents[2]


def test_a_down_server_is_said_once_then_back(
    opencode_binary: Path, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path / "watch.log"
    env = {**os.environ, "OCTEL_DATA_DIR": str(tmp_path / "data"), "COLUMNS": "300", "NO_COLOR": "1"}
    cmd = [sys.executable, "-m", "cli", "watch", "--server", url, "--poll-interval", "0.5", "--for", "300"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out)
    try:
        said = f"cannot reach {url} (connection refused); retrying quietly, with backoff up to 30 s"
        wait_for(lambda: said in log.read_text())
        time.sleep(8.0)  # four polls at 0.5 s would have printed sixteen lines; backoff: 1, 2, 4 s
        lines = [x for x in log.read_text().splitlines() if x.strip()]
        assert [x for x in lines if "cannot reach" in x] == [f"watch {said}"], lines
        assert not [x for x in lines if "Error" in x or "poll failed" in x], lines
        assert len(lines) == 2, lines  # "following …" and the one sentence
        with opencode_server(opencode_binary, tmp_path / "oc", fake_llm.url, port=port):
            back = wait_for(
                lambda: re.findall(rf"{re.escape(url)} is back after (\d+m )?\d+s", log.read_text()), 60
            )
            assert len(back) == 1
            time.sleep(2.0)  # followed again: nothing more is said
            text = log.read_text()
            assert text.count("cannot reach") == 1 and "Error" not in text and "polling" not in text, text
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
