"""Ingestion round trips, idempotency, bad input and auth, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import func, select
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Aggregate, Cycle, Daemon
from web.app import create_app
from web.app_state import app_state


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _counts(client: TestClient) -> tuple[int, ...]:
    with session_scope(app_state(client.app).engine, write=False) as db:
        return tuple(
            db.exec(select(func.count()).select_from(m)).one() for m in (Cycle, Daemon, AgentRun, Aggregate)
        )


def test_begin_finish_round_trip(client: TestClient, auth: dict[str, str]) -> None:
    r = client.post(
        "/api/v1/cycles/begin",
        json={
            "cycle_id": "c1",
            "driver": "review",
            "candidates_count": 3,
            "started_at": "2026-11-29T10:00:00Z",
        },
        headers=auth,
    )
    assert r.status_code == 201, r.text
    assert r.json()["cycle"]["in_flight"] is True
    r = client.post(
        "/api/v1/cycles/finish",
        json={
            "cycle_id": "c1",
            "driver": "review",
            "terminal_state": "done",
            "worker_outcome": "merged",
            "ended_at": "2026-11-29T10:05:00Z",
        },
        headers=auth,
    )
    assert r.status_code == 200, r.text
    c = r.json()["cycle"]
    assert (c["in_flight"], c["duration_s"], c["candidates_count"], c["start_synthesised"]) == (
        False,
        300.0,
        3,
        False,
    )
    listed = client.get("/api/cycles").json()["items"]
    assert [x["cycle_id"] for x in listed] == ["c1"]


def test_retries_are_idempotent(client: TestClient, auth: dict[str, str]) -> None:
    begin = {"cycle_id": "c2", "driver": "impl"}
    finish = {"cycle_id": "c2", "driver": "impl", "terminal_state": "failed", "error_kind": "timeout"}
    assert client.post("/api/v1/cycles/begin", json=begin, headers=auth).status_code == 201
    assert client.post("/api/v1/cycles/begin", json=begin, headers=auth).status_code == 200
    assert client.post("/api/v1/cycles/finish", json=finish, headers=auth).json()["changed"] is True
    before = _counts(client)
    assert client.post("/api/v1/cycles/finish", json=finish, headers=auth).json()["changed"] is False
    assert _counts(client) == before
    with session_scope(app_state(client.app).engine, write=False) as db:
        total = db.exec(select(Aggregate.value).where(Aggregate.metric == "cycles_total")).one()
    assert total == 1


def test_finish_without_begin_keeps_its_start_and_driver(client: TestClient, auth: dict[str, str]) -> None:
    r = client.post(
        "/api/v1/cycles/finish",
        json={
            "cycle_id": "c3",
            "driver": "conflict",
            "terminal_state": "done",
            "started_at": "2026-11-29T09:00:00+00:00",
            "ended_at": "2026-11-29T09:01:00+00:00",
        },
        headers=auth,
    )
    c = r.json()["cycle"]
    assert (c["driver"], c["started_at"], c["start_synthesised"], c["duration_s"]) == (
        "conflict",
        "2026-11-29T09:00:00+00:00",
        True,
        60.0,
    )


BAD: list[tuple[str, dict[str, Any], str]] = [
    ("/api/v1/cycles/begin", {"driver": "x"}, "body.cycle_id"),
    ("/api/v1/cycles/begin", {"cycle_id": "a", "driver": "x", "surprise": 1}, "body.surprise"),
    (
        "/api/v1/cycles/begin",
        {"cycle_id": "a", "driver": "x", "candidates_count": -1},
        "body.candidates_count",
    ),
    ("/api/v1/cycles/begin", {"cycle_id": "a", "driver": "x", "started_at": "yesterday"}, "body.started_at"),
    ("/api/v1/cycles/finish", {"cycle_id": "a", "driver": "x"}, "body.terminal_state"),
    (
        "/api/v1/cycles/finish",
        {"cycle_id": "a", "driver": "x", "terminal_state": "ok", "worker_wallclock_seconds": -3},
        "body.worker_wallclock_seconds",
    ),
    ("/api/v1/heartbeat", {"driver": "x", "host": "h", "pid": 0}, "body.pid"),
    ("/api/v1/heartbeat", {"driver": "", "host": "h"}, "body.driver"),
    (
        "/api/v1/agent-runs",
        {"task": "t", "result": {"type": "result", "usage": {"input_tokens": "many"}}},
        "body.result",
    ),
    ("/api/v1/agent-runs", {"task": "t"}, "body.result"),
]


@pytest.mark.parametrize(("path", "body", "field"), BAD)
def test_bad_input_names_the_field_and_writes_nothing(
    client: TestClient, auth: dict[str, str], path: str, body: dict[str, Any], field: str
) -> None:
    before = _counts(client)
    r = client.post(path, json=body, headers=auth)
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "invalid_request"
    assert field in err["message"]
    assert any(f["field"] == field for f in err["fields"])
    assert _counts(client) == before


def test_malformed_json_body(client: TestClient, auth: dict[str, str]) -> None:
    r = client.post(
        "/api/v1/heartbeat", content=b"{not json", headers={**auth, "content-type": "application/json"}
    )
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "invalid_request"


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic abc"}])
def test_writes_need_the_token(client: TestClient, headers: dict[str, str]) -> None:
    before = _counts(client)
    r = client.post("/api/v1/heartbeat", json={"driver": "d", "host": "h"}, headers=headers)
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    assert r.json()["error"]["code"] == "unauthorized"
    assert _counts(client) == before


def test_cycle_owned_by_another_driver_is_a_conflict(client: TestClient, auth: dict[str, str]) -> None:
    client.post("/api/v1/cycles/begin", json={"cycle_id": "c9", "driver": "a"}, headers=auth)
    r = client.post("/api/v1/cycles/begin", json={"cycle_id": "c9", "driver": "b"}, headers=auth)
    assert r.status_code == 409
    assert r.json()["error"]["code"] == "conflict"


def test_claude_run_is_stored_once(client: TestClient, auth: dict[str, str]) -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 1200,
        "num_turns": 3,
        "session_id": "s-1",
        "uuid": "u-1",
        "total_cost_usd": 0.12,
        "usage": {
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 40,
        },
        "modelUsage": {"claude-sonnet-4-5": {"costUSD": 0.12}},
    }
    body = {"task": "T-1", "agent": "implementer", "exit_code": 0, "result": result}
    r = client.post("/api/v1/agent-runs", json=body, headers=auth)
    assert r.status_code == 201, r.text
    assert r.json()["run"]["model"] == "claude-sonnet-4-5"
    assert client.post("/api/v1/agent-runs", json=body, headers=auth).status_code == 200
    with session_scope(app_state(client.app).engine, write=False) as db:
        runs = db.exec(select(AgentRun)).all()
    assert [(r.cache_read_tokens, r.cache_creation_tokens, r.cost_usd) for r in runs] == [(30, 40, 0.12)]


def test_non_zero_exit_counts_as_a_failed_run(client: TestClient, auth: dict[str, str]) -> None:
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "uuid": "u-2",
        "total_cost_usd": 0.5,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    r = client.post(
        "/api/v1/agent-runs",
        json={"task": "T", "agent": "a", "exit_code": 137, "result": result},
        headers=auth,
    )
    assert r.json()["run"]["is_error"] is True
    with session_scope(app_state(client.app).engine, write=False) as db:
        outcome = db.exec(select(Aggregate.labels).where(Aggregate.metric == "agent_runs_total")).one()
    assert '"outcome":"error"' in outcome
