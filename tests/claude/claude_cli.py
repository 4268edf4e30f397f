"""Run the real Claude Code CLI offline against the fake API, in scratch folders.

The CLI is found under ``$OCTEL_CLAUDE_NPM_DIR`` (default ``~/.cache/octel-test/claude``,
where ``.ci/run`` installs it). Its environment is built from nothing but ``PATH``, so no key or
setting of the machine leaks in; ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` keeps it from
calling home, and a proxy pointing at the fake catches anything that would still try.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from realparts import require

__all__ = ["KEY", "ClaudeRun", "claude_bin", "offline_env", "run_claude"]

KEY = "sk-ant-test-not-a-real-key-0000"  # the fake API takes any key

VERSION = "2.1.328"
HOW = (
    "install it with `mkdir -p ~/.cache/octel-test/claude && cd ~/.cache/octel-test/claude && "
    f"npm install --no-audit --no-fund @anthropic-ai/claude-code@{VERSION}` "
    "(or point OCTEL_CLAUDE_NPM_DIR at such a folder); .ci/run does this"
)


def claude_bin() -> str:
    """The CLI's executable, or a skip (a failure under CI) saying how to install it."""
    folder = Path(os.environ.get("OCTEL_CLAUDE_NPM_DIR") or Path.home() / ".cache" / "octel-test" / "claude")
    exe = folder / "node_modules" / ".bin" / "claude"
    require(exe.is_file() and os.access(exe, os.X_OK), f"Claude Code CLI {VERSION}", HOW)
    return str(exe)


@dataclass
class ClaudeRun:
    exit_code: int
    stdout: str
    stderr: str
    config_dir: Path
    work_dir: Path


def _work_dir(root: Path) -> Path:
    work = root / "project"
    work.mkdir(parents=True)
    (work / "README.md").write_text("# demo\n\nA tiny project for the CLI to look at.\n")
    (work / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    return work


def offline_env(root: Path, api_url: str) -> dict[str, str]:
    """The CLI's environment: nothing of the machine but PATH, the fake API, scratch folders
    under ``root`` (config, home, tmp), and every switch that keeps it offline."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": KEY,
        "CLAUDE_CONFIG_DIR": str(root / "config"),
        "HOME": str(root / "home"),
        "TMPDIR": str(root / "tmp"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "HTTP_PROXY": api_url,
        "HTTPS_PROXY": api_url,
        "NO_PROXY": "127.0.0.1,localhost",
    }


def run_claude(root: Path, api_url: str, *args: str, env: dict[str, str] | None = None) -> ClaudeRun:
    """``claude ARGS`` in a fresh project under ``root``; its transcripts go to ``root/config``."""
    exe = claude_bin()
    work = _work_dir(root)
    config, home, tmp = root / "config", root / "home", root / "tmp"
    for d in (config, home, tmp):
        d.mkdir(parents=True, exist_ok=True)
    full = {
        **offline_env(root, api_url),
        **({"IS_SANDBOX": "1"} if os.geteuid() == 0 else {}),  # skip-permissions refuses root otherwise
        **(env or {}),
    }
    done = subprocess.run(
        [exe, *args],
        cwd=work,
        env=full,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    return ClaudeRun(done.returncode, done.stdout, done.stderr, config, work)
