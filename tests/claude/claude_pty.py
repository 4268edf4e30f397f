"""The real Claude Code CLI run interactively in a pseudo-terminal, offline against the fake API:
what a person runs at a prompt, so it can stop and ask (a permission prompt) while a watcher
looks on. Onboarding, the folder's trust and the test key are accepted in its config first."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import reaper
from claude_cli import KEY, claude_bin, offline_env

__all__ = ["Interactive", "claude_env", "interactive_claude"]


def claude_env(root: Path, api_url: str) -> dict[str, str]:
    """The offline environment `run_claude` gives the CLI, in a terminal."""
    return {**offline_env(root, api_url), "TERM": "xterm-256color"}


@dataclass
class Interactive:
    proc: subprocess.Popen[bytes]
    master: int
    config_dir: Path
    work_dir: Path
    screen: bytearray = field(default_factory=bytearray)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)


def _drain(it: Interactive) -> None:
    # the terminal must be read, or the CLI blocks once its output fills the buffer
    while True:
        try:
            got = os.read(it.master, 65536)
        except OSError:
            return
        if not got:
            return
        it.screen.extend(got[-65536:])


@contextlib.contextmanager
def interactive_claude(root: Path, api_url: str, *args: str) -> Iterator[Interactive]:
    """``claude ARGS`` at a terminal in a fresh project under ``root``; stopped on exit."""
    exe = claude_bin()
    work, config = root / "project", root / "config"
    for d in (work, config, root / "home", root / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    accepted = {
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "projects": {str(work): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True}},
        "customApiKeyResponses": {"approved": [KEY[-20:]], "rejected": []},
    }
    (config / ".claude.json").write_text(json.dumps(accepted))
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [exe, *args],
        cwd=work,
        env=claude_env(root, api_url),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
    )
    os.close(slave)
    reaper.adopt(proc.pid, group=True)
    it = Interactive(proc, master, config, work)
    reader = threading.Thread(target=_drain, args=(it,), daemon=True)
    reader.start()
    try:
        yield it
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        reaper.release(proc.pid)
        os.close(master)
        reader.join(5)
