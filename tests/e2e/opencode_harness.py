"""A real `opencode serve` on loopback for end-to-end tests.

Finds opencode-ai in ``$OCTEL_OPENCODE_NPM_DIR`` (default ``~/.cache/octel-test/opencode``) and
installs it there with npm when missing. Each server gets a scratch HOME and XDG folders, a git
project with ``opencode.json`` pointing at the in-process fake LLM, and is stopped with SIGTERM,
then SIGKILL, on its whole process group.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import reaper
from realparts import free_port, stop_group, which

__all__ = ["VERSION", "OpenCode", "find_or_install", "npm_dir", "opencode_server"]

VERSION = "1.18.33"
HOW = (
    "install Node.js 20+ with npm (Debian: apt-get install nodejs npm); the test installs "
    f"opencode-ai@{VERSION} into $OCTEL_OPENCODE_NPM_DIR by itself"
)
_CANDIDATES = (
    "node_modules/opencode-ai/bin/opencode.exe",
    "node_modules/opencode-linux-x64/bin/opencode",
    "node_modules/opencode-linux-x64-baseline/bin/opencode",
    "node_modules/opencode-linux-arm64/bin/opencode",
)


def npm_dir() -> Path:
    default = Path.home() / ".cache" / "octel-test" / "opencode"
    return Path(os.environ.get("OCTEL_OPENCODE_NPM_DIR") or default)


def _runnable(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    try:
        out = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.stdout.strip() == VERSION


def find_or_install() -> tuple[Path | None, str]:
    """(binary, why not) — installs opencode-ai with npm into npm_dir() when missing."""
    folder = npm_dir()
    for c in _CANDIDATES:
        if _runnable(folder / c):
            return folder / c, ""
    if which("npm") is None or which("node") is None:
        return None, "node/npm"
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "package.json").exists():
        (folder / "package.json").write_text('{"name": "octel-test-opencode", "private": true}\n')
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", f"opencode-ai@{VERSION}"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    for c in _CANDIDATES:
        if _runnable(folder / c):
            return folder / c, ""
    return None, f"npm install failed: {proc.stderr[-500:]}"


@dataclass
class OpenCode:
    url: str
    project: Path
    log: Path
    process: subprocess.Popen[bytes]


def _config(llm_url: str) -> dict[str, object]:
    model = {
        "tool_call": True,
        "reasoning": True,
        "limit": {"context": 200000, "output": 8192},
        "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
    }
    return {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": "fake/fake-model",
        "small_model": "fake/fake-small",
        "provider": {
            "fake": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Fake LLM",
                "options": {"baseURL": llm_url, "apiKey": "sk-fake-not-a-secret"},
                "models": {
                    "fake-model": {"name": "Fake Model", **model},
                    "fake-small": {"name": "Fake Small", **model, "tool_call": False, "reasoning": False},
                    # no cost configured: the server records 0 for its answers (octel prices them)
                    "fake-free": {"name": "Fake Free", **{k: v for k, v in model.items() if k != "cost"}},
                },
            }
        },
        # nesting needs subagent_depth > 1 and an agent with an explicit task rule
        "subagent_depth": 2,
        "agent": {
            "nester": {
                "mode": "subagent",
                "permission": {"task": "allow"},
                "description": "Test subagent that may delegate again.",
            }
        },
    }


@contextmanager
def opencode_server(binary: Path, work: Path, llm_url: str, port: int | None = None) -> Iterator[OpenCode]:
    home, project = work / "home", work / "project"
    project.mkdir(parents=True)
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCODE")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        XDG_DATA_HOME=str(home / ".local/share"),
        XDG_CACHE_HOME=str(home / ".cache"),
        XDG_STATE_HOME=str(home / ".local/state"),
    )
    for flag in ("AUTOUPDATE", "SHARE", "MODELS_FETCH", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "CLAUDE_CODE"):
        env[f"OPENCODE_DISABLE_{flag}"] = "1"
    (project / "README.md").write_text("# demo project\n\nA tiny repo for octel tests.\n")
    (project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "opencode.json").write_text(json.dumps(_config(llm_url), indent=2))
    git = ["git", "-c", "user.name=octel", "-c", "user.email=octel@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True, env=env)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=project, check=True, env=env)
    port = port or free_port()
    log = work / "opencode.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(binary),
                "serve",
                "--hostname",
                "127.0.0.1",
                "--port",
                str(port),
                "--print-logs",
                "--log-level",
                "INFO",
            ],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    reaper.adopt(proc.pid, group=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield OpenCode(url, project, log, proc)
    finally:
        stop_group(proc)


def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    # a request sent while the server boots can hang: every probe has its own timeout
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"opencode exited with {proc.returncode}: {log.read_text()[-800:]}")
        try:
            if httpx.get(url + "/global/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"opencode did not come up in 60 s: {log.read_text()[-800:]}")
