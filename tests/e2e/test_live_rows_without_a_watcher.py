"""Live rows of a server whose watcher died (`kill -9`, its lease ran out) read
`unknown (no watcher since …)` in `sessions list --live`, `/api/live` and the console's data,
count as unknown in `/metrics` (out of the busy and ask gauges), and `octel doctor` names the
server nobody follows; while the watcher lives they read what it saw."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from driver import start, wait_for
from fakellm import FakeLLM
from fastapi.testclient import TestClient
from opencode_harness import OpenCode

from telemetry.queries.live_stale import following
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.timeutil import utcnow
from web.app import create_app

pytestmark = [pytest.mark.opencode]

ROOT = Path(__file__).resolve().parents[2]


def test_rows_of_a_server_nobody_follows_read_unknown_everywhere(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    # a turn that waits on the model long enough for the watcher to die while it is busy
    fake_llm.load({"title": "Tree", "turns": [], "default": {"text": "Hello.", "delay": 60}})
    data, db_url = tmp_path / "data", f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(db_url)
    upgrade(engine)
    env = {
        **os.environ,
        "OCTEL_DATABASE_URL": db_url,
        "OCTEL_DATA_DIR": str(data),
        "OCTEL_WATCH_LEASE_SECONDS": "3",
        "COLUMNS": "300",
    }
    log = tmp_path / "watch.log"
    with log.open("wb") as out:
        watcher = subprocess.Popen(
            [sys.executable, "-m", "cli", "watch", "--server", opencode.url],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=out,
        )
    http = httpx.Client(base_url=opencode.url, timeout=15)
    settings = Settings(
        data_dir=data,
        database_url=db_url,
        ingest_token="test-token-0123456789",  # type: ignore[arg-type]
        _env_file=None,
    )  # type: ignore[call-arg]

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cli", *args],
            cwd=ROOT,
            env=env,
            text=True,
            capture_output=True,
            timeout=60,
        )

    def live() -> list[dict[str, object]]:
        items = json.loads(cli("sessions", "list", "--live", "--json").stdout)
        return items if isinstance(items, list) else items["items"]

    try:
        root = start(http, "Hi.", {"title": "busy when its watcher died"})
        wait_for(lambda: any(r["session_id"] == root and r["state"] == "busy" for r in live()), timeout=60)
        assert "nobody follows" not in cli("doctor").stdout
        os.kill(watcher.pid, signal.SIGKILL)
        watcher.wait(10)

        def stale() -> bool:
            with session_scope(engine, write=False) as db:
                return bool(following(db, utcnow()).stale)

        wait_for(stale, timeout=30)
        (row,) = [r for r in live() if r["session_id"] == root]
        assert row["state"] == "unknown" and str(row["explanation"]).startswith("unknown (no watcher since ")
        table = cli("sessions", "list", "--live")
        assert "unknown (no watcher since" in table.stdout, table.stdout
        doctor = json.loads(cli("doctor", "--json").stdout)
        (check,) = [c for c in doctor["checks"] if c["name"] == "watchers"]
        assert check["status"] == "warn" and f"nobody follows {opencode.url}" in check["detail"]
        with TestClient(create_app(settings)) as client:
            auth = {"Authorization": "Bearer test-token-0123456789"}
            page = client.get("/api/live", headers=auth).json()
            (api_row,) = [r for r in page["items"] if r["session_id"] == root]
            assert api_row["state"] == "unknown" and api_row["reason"].startswith("no watcher since")
            assert page["counts"]["busy"] == 0 and page["counts"]["unknown"] >= 1
            text = client.get("/metrics", headers=auth).text
        gauges = [ln for ln in text.splitlines() if ln.startswith("octel_live_sessions{")]
        assert any('state="unknown"' in ln and not ln.endswith(" 0.0") for ln in gauges), gauges
        assert all(ln.endswith(" 0.0") for ln in gauges if 'state="busy"' in ln), gauges
        assert "octel_live_busy_oldest_activity_timestamp_seconds{" not in text
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
    finally:
        http.close()
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait(10)
        engine.dispose()
