"""The real Claude Code CLI 2.1.328 at a terminal, stopped at a permission prompt or on a
question to the user while `octel watch --claude-dir` runs: the live row says it needs input
(the CLI's own word through `claude agents --json`, the tool and its command or question from
the transcript) in `sessions list --live`, `/api/live` (`source: claude_code`), `why` and
`/metrics`; once the person answers, the row follows the session to idle."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_cli import claude_bin
from claude_pty import interactive_claude
from fake_api import Answer, fake_anthropic
from fastapi.testclient import TestClient

from telemetry.settings import Settings
from web.app import create_app

pytestmark = [pytest.mark.claude]

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "test-token-0123456789"
COMMAND = "touch made-by-claude.txt"
QUESTION = "Which database should I use?"
PROMPTED = ("Bash", {"command": COMMAND, "description": "Make a file"})
ASKED = (
    "AskUserQuestion",
    {
        "questions": [
            {
                "question": QUESTION,
                "header": "Database",
                "multiSelect": False,
                "options": [
                    {"label": "PostgreSQL", "description": "A server"},
                    {"label": "SQLite", "description": "A file"},
                ],
            }
        ]
    },
)
# what each stop says: the tool call waiting, its permission, its pattern, the CLI's own word
CASES = {
    "permission prompt": (PROMPTED, "Bash", COMMAND, "needs input: permission prompt"),
    "question": (ASKED, "question", QUESTION, "needs input: input needed"),
}


def _wait(what: Callable[[], Any], timeout: float, why: str) -> Any:
    # a bound on a wait for a real CLI, not a speed claim: the content is what is asserted
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := what():
            return got
        time.sleep(0.3)
    raise AssertionError(f"not seen in {timeout} s: {why}")


@pytest.mark.parametrize("case", list(CASES))
def test_a_session_stopped_on_the_person_is_live_and_needs_input(tmp_path: Path, case: str) -> None:
    call, permission, pattern, reason = CASES[case]
    data, db_url = tmp_path / "data", f"sqlite:///{tmp_path / 'store.db'}"
    env = {
        **os.environ,
        "OCTEL_DATABASE_URL": db_url,
        "OCTEL_DATA_DIR": str(data),
        "OCTEL_INGEST_TOKEN": TOKEN,
        "OCTEL_WATCH_LEASE_SECONDS": "5",
        "HOME": str(tmp_path / "run" / "home"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "COLUMNS": "300",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli", *args],
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
            timeout=60,
        )

    def live() -> list[dict[str, Any]]:
        out = cli("sessions", "list", "--live", "--json").stdout
        got = json.loads(out) if out.strip() else []
        return list(got if isinstance(got, list) else got["items"])

    main = [Answer("Let me see.", tools=[call])]
    log = tmp_path / "watch.log"
    with (
        fake_anthropic(main) as fake,
        interactive_claude(tmp_path / "run", fake.url, "--permission-mode", "default", "Make the file") as cl,
        log.open("wb") as out,
    ):
        cmd = [sys.executable, "-m", "cli", "watch", "--claude-dir", str(cl.config_dir)]
        cmd += ["--claude-cli", claude_bin(), "--poll-interval", "0.5", "--for", "240"]
        watcher = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out)
        try:
            # a question is seen waiting from the transcript alone; the CLI's own word comes with
            # its next listing of the session (`claude agents`), so wait for that too
            rows = _wait(
                lambda: [r for r in live() if r["state"] == "waiting_permission" and r["reason"] == reason],
                120,
                f"a row needing input, saying {reason!r}",
            )
            (row,) = rows
            assert row["source"] == "claude_code" and row["server"].startswith("claude-code:")
            assert row["ask"]["permission"] == permission and pattern in row["ask"]["patterns"]
            assert row["reason"] == reason  # the CLI's own word
            assert row["explanation"].startswith("needs input for ") and row["tokens"]["input"] > 0
            assert not (cl.work_dir / "made-by-claude.txt").exists()  # it really waits
            sid = row["session_id"]
            why = json.loads(cli("why", sid, "--json").stdout)
            assert why["code"] == "running" and why["live"]["state"] == "waiting_permission"
            settings = Settings(data_dir=data, database_url=db_url, ingest_token=TOKEN, _env_file=None)  # type: ignore[call-arg,arg-type]
            with TestClient(create_app(settings)) as client:
                auth = {"Authorization": f"Bearer {TOKEN}"}
                (api_row,) = [
                    r for r in client.get("/api/live", headers=auth).json()["items"] if r["session_id"] == sid
                ]
                text = client.get("/metrics", headers=auth).text
            assert api_row["source"] == "claude_code" and api_row["state"] == "waiting_permission"
            waiting = [
                ln
                for ln in text.splitlines()
                if ln.startswith("octel_live_sessions{") and "waiting_permission" in ln
            ]
            assert any("claude-code:" in ln and not ln.endswith(" 0.0") for ln in waiting), waiting
            cl.type(b"\r")  # "1. Yes" (or the first option): the call returns, the fake model says Done.
            if case == "permission prompt":
                _wait(lambda: (cl.work_dir / "made-by-claude.txt").exists(), 60, "the tool ran")
            _wait(lambda: [r for r in live() if r["session_id"] == sid and r["state"] == "idle"], 60, "idle")
            # at a terminal the CLI tries to reach out through the proxy anyway: the fake refuses
            # every CONNECT, so the run stays offline (counted in fake.connects)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
        finally:
            if watcher.poll() is None:
                watcher.send_signal(signal.SIGINT)
                watcher.wait(30)
