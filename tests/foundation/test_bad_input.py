"""Bad input anywhere gets one clear answer (422/409 or one sentence and exit 2), never a 500
or a traceback, and nothing is written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import func, select
from store_templates import migrate_by_copy
from typer.testing import CliRunner

from cli import app
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Aggregate, Cycle
from web.app import create_app
from web.app_state import app_state


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _rows(client: TestClient) -> tuple[int, int, int]:
    with session_scope(app_state(client.app).engine, write=False) as db:
        return tuple(db.exec(select(func.count()).select_from(m)).one() for m in (Cycle, AgentRun, Aggregate))  # type: ignore[return-value]


@pytest.mark.parametrize(
    "result",
    [
        {"type": "result", "total_cost_usd": -5},
        {"type": "result", "usage": {"input_tokens": -1}},
    ],
)
def test_negative_numbers_in_a_claude_result_are_422(
    client: TestClient, auth: dict[str, str], result: dict[str, object]
) -> None:
    before = _rows(client)
    r = client.post("/api/v1/agent-runs", json={"task": "t", "result": result}, headers=auth)
    assert r.status_code == 422
    assert r.json()["error"]["fields"][0]["field"] == "body.result"
    assert _rows(client) == before


def test_finish_before_its_start_is_refused(client: TestClient, auth: dict[str, str]) -> None:
    r = client.post(
        "/api/v1/cycles/finish",
        json={
            "cycle_id": "x",
            "driver": "d",
            "terminal_state": "done",
            "started_at": "2026-11-02T00:00:00Z",
            "ended_at": "2026-11-01T00:00:00Z",
        },
        headers=auth,
    )
    assert r.status_code == 422
    client.post(
        "/api/v1/cycles/begin",
        json={"cycle_id": "y", "driver": "d", "started_at": "2026-11-02T00:00:00Z"},
        headers=auth,
    )
    before = _rows(client)
    r = client.post(
        "/api/v1/cycles/finish",
        json={"cycle_id": "y", "driver": "d", "terminal_state": "done", "ended_at": "2025-11-01T00:00:00Z"},
        headers=auth,
    )
    assert r.status_code == 409
    assert "before cycle 'y' started" in r.json()["error"]["message"]
    assert _rows(client) == before


@pytest.mark.parametrize("path", ["/api/cycles", "/api/sessions", "/api/costs"])
def test_a_window_too_far_back_is_422_not_500(client: TestClient, path: str) -> None:
    r = client.get(path, params={"since": "99999999999d"})
    assert r.status_code == 422
    assert "error" in r.json()


def test_long_claude_results_are_accepted(client: TestClient, auth: dict[str, str]) -> None:
    result = {"type": "result", "subtype": "success", "uuid": "long-1", "result": "x" * 200_000}
    r = client.post("/api/v1/agent-runs", json={"task": "t", "result": json.dumps(result)}, headers=auth)
    assert r.status_code == 201, r.text


def _cli(tmp_path: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "d"), *args], input=stdin)
    assert "Traceback" not in r.output
    return r.exit_code, r.output


def test_cli_runs_add_takes_long_results_and_refuses_binary(tmp_path: Path) -> None:
    big = json.dumps({"type": "result", "subtype": "success", "uuid": "u-big", "result": "y" * 12_000})
    code, out = _cli(tmp_path, "runs", "add", "-", "--task", "T", stdin=big.encode())
    assert code == 0, out
    code, out = _cli(tmp_path, "runs", "add", "-", stdin=b"\xff\xfe\x00binary")
    assert code == 2 and "UTF-8" in out


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["cycles", "list", "--since", "99999999999d"], 2, "longer than any time"),
        (["--database-url", "nonsense://", "db", "upgrade"], 2, "not a usable database URL"),
        (["--data-dir", "/proc/octel-nope", "db", "upgrade"], 1, "cannot"),
    ],
)
def test_cli_bad_settings_and_windows_are_one_sentence(
    tmp_path: Path, args: list[str], code: int, says: str
) -> None:
    r = CliRunner().invoke(app, args)
    assert "Traceback" not in r.output
    assert r.exit_code == code, r.output
    assert says in r.output
