"""Live rows name what their server runs: the OpenCode generation and version the watcher's
probe found, in the stored row, `/api/live`, `octel sessions list --live` (its `opencode`
column and `--json`) and `/metrics` (`octel_live_server_info`)."""

from __future__ import annotations

import json
from pathlib import Path

from fake_server import FakeOpenCode2
from fastapi.testclient import TestClient
from pydantic import SecretStr
from typer.testing import CliRunner
from watch_v2 import new_store, until, watching

from cli import app
from web.app import create_app

TOKEN = "test-token-0123456789"


def test_every_reader_of_a_live_row_names_its_servers_generation(oc2: FakeOpenCode2, tmp_path: Path) -> None:
    store = new_store(
        tmp_path / "data",
        opencode_passwords=SecretStr(json.dumps({oc2.url: oc2.password})),
        ingest_token=SecretStr(TOKEN),
        redact_values="",
    )
    with watching(store, oc2.url) as st:  # type: ignore[arg-type]
        until(lambda: oc2._subs, what="the watcher on /api/event")
        sid = oc2.session(title="busy on 2.x")
        oc2.user(sid, "go")
        row = until(lambda: (r := st.live(sid)) and r.state == "busy" and r, what="busy")  # type: ignore[attr-defined]
    assert (row.generation, row.server_version) == (2, oc2.version)

    with TestClient(create_app(store.settings)) as client:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        (item,) = [r for r in client.get("/api/live", headers=auth).json()["items"] if r["session_id"] == sid]
        text = client.get("/metrics", headers=auth).text
    assert (item["generation"], item["server_version"]) == (2, oc2.version)
    info = f'octel_live_server_info{{generation="2",server="{oc2.url}",version="{oc2.version}"}} 1.0'
    assert info in text.splitlines(), [ln for ln in text.splitlines() if "server_info" in ln]

    runner = CliRunner(env={"COLUMNS": "250", "NO_COLOR": "1"})
    base = ["--data-dir", str(store.settings.data_dir), "--database-url", store.settings.db_url]
    listed = runner.invoke(app, [*base, "sessions", "list", "--live", "--json"], catch_exceptions=False)
    page = json.loads(listed.stdout)
    (out,) = [r for r in page.get("items", page) if r["session_id"] == sid]
    assert (out["generation"], out["server_version"]) == (2, oc2.version)
    table = runner.invoke(app, [*base, "sessions", "list", "--live"], catch_exceptions=False).stdout
    assert "opencode" in table and oc2.version in table, table
