"""Every input is bounded by its schema: a 422 naming the field, never a 500, on SQLite and
PostgreSQL; and what is stored can never make a read route answer 500."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import func, select
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import Cycle, Daemon
from telemetry.timeutil import utcnow
from web.app import create_app
from web.app_state import app_state

BEGIN = {"cycle_id": "c1", "driver": "review"}
FINISH = {"cycle_id": "c1", "driver": "review", "terminal_state": "done"}
YEAR_ONE_EAST = "0001-01-01T00:00:00+14:00"  # before year 1 once in UTC
YEAR_MAX_WEST = "9999-12-31T23:59:59-14:00"  # after year 9999 once in UTC


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's own upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _nested(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    for _ in range(depth):
        doc = {"a": doc}
    return doc


def _field(r: Any) -> str:
    assert r.status_code == 422, (r.status_code, r.text[:300])
    body = r.json()["error"]
    assert body["code"] == "invalid_request"
    return str(body["fields"][0]["field"])


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/cycles/begin", {**BEGIN, "candidates_count": 2**63}, "body.candidates_count"),
        # the published limit holds for the value as sent, before its whitespace is stripped
        ("/api/v1/cycles/begin", {**BEGIN, "cycle_id": " " + "c" * 200}, "body.cycle_id"),
        ("/api/v1/cycles/begin", {**BEGIN, "driver": "   "}, "body.driver"),
        ("/api/v1/cycles/begin", {**BEGIN, "claims_count": 2**31}, "body.claims_count"),
        ("/api/v1/cycles/begin", {**BEGIN, "pid": 2**64}, "body.pid"),
        ("/api/v1/cycles/finish", {**FINISH, "escalated_count": 10**30}, "body.escalated_count"),
        ("/api/v1/heartbeat", {"driver": "d", "host": "h", "pid": 4294967296}, "body.pid"),
        ("/api/v1/agent-runs", {"result": {"type": "result"}, "exit_code": 2**63}, "body.exit_code"),
        ("/api/v1/cycles/begin", {**BEGIN, "started_at": YEAR_ONE_EAST}, "body.started_at"),
        ("/api/v1/cycles/finish", {**FINISH, "ended_at": YEAR_MAX_WEST}, "body.ended_at"),
        ("/api/v1/heartbeat", {"driver": "d", "host": "h", "at": YEAR_ONE_EAST}, "body.at"),
        (
            "/api/v1/cycles/finish",
            {**FINISH, "worker_wallclock_seconds": 1e12},
            "body.worker_wallclock_seconds",
        ),
        ("/api/v1/cycles/begin", {**BEGIN, "meta": _nested(500)}, "body.meta"),
        ("/api/v1/cycles/begin", {**BEGIN, "meta": {"n": 2**64}}, "body.meta"),
        ("/api/v1/cycles/begin", {**BEGIN, "driver": "a\x00b"}, "body.driver"),
        ("/api/v1/cycles/finish", {**FINISH, "error_kind": "x\x00"}, "body.error_kind"),
    ],
)
def test_out_of_range_input_is_422_naming_the_field(
    client: TestClient, auth: dict[str, str], path: str, body: dict[str, Any], field: str
) -> None:
    assert _field(client.post(path, json=body, headers=auth)).startswith(field)
    with session_scope(app_state(client.app).engine, write=False) as db:
        assert db.exec(select(func.count()).select_from(Cycle)).one() == 0
        assert db.exec(select(func.count()).select_from(Daemon)).one() == 0


_FIN = '{"cycle_id":"c","driver":"d","terminal_state":"x","worker_wallclock_seconds":'
_RUN = '{"result":{"type":"result",'


@pytest.mark.parametrize(
    ("path", "text", "field"),
    [
        ("/api/v1/cycles/finish", _FIN + "NaN}", "body.worker_wallclock_seconds"),
        ("/api/v1/cycles/finish", _FIN + "Infinity}", "body.worker_wallclock_seconds"),
        ("/api/v1/cycles/begin", '{"cycle_id":"c","driver":"d","meta":{"x":[1,-Infinity]}}', "body.meta"),
        ("/api/v1/agent-runs", _RUN + '"total_cost_usd":NaN}}', "body.result"),
        ("/api/v1/agent-runs", _RUN + '"usage":{"input_tokens":1e300}}}', "body.result"),
        ("/api/v1/agent-runs", _RUN + '"num_turns":"many"}}', "body.result"),
        ("/api/v1/agent-runs", _RUN + '"uuid":{"a":1}}}', "body.result"),
        ("/api/v1/agent-runs", _RUN + '"modelUsage":{"m":5},"subtype":[1]}}', "body.result"),
    ],
)
def test_non_finite_and_mistyped_numbers_are_422(
    client: TestClient, auth: dict[str, str], path: str, text: str, field: str
) -> None:
    r = client.post(path, content=text.encode(), headers={**auth, "content-type": "application/json"})
    assert _field(r).startswith(field)


def _cursor(at: str, row_id: int) -> str:
    return base64.urlsafe_b64encode(json.dumps([at, row_id]).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/api/cycles", {"since": YEAR_ONE_EAST}, "query.since"),
        ("/api/cycles", {"until": YEAR_MAX_WEST}, "query.until"),
        ("/api/sessions", {"since": YEAR_ONE_EAST}, "query.since"),
        ("/api/costs", {"until": YEAR_ONE_EAST}, "query.until"),
        ("/api/cycles", {"cursor": _cursor(YEAR_ONE_EAST, 1)}, "query.cursor"),
        ("/api/cycles", {"cursor": _cursor("2026-01-01T00:00:00+00:00", 2**64)}, "query.cursor"),
        ("/api/sessions", {"cursor": _cursor("2026-01-01T00:00:00+00:00", 2**63)}, "query.cursor"),
        ("/api/sessions", {"q": "a\x00b"}, "query.q"),
        ("/api/cycles", {"driver": "\x00"}, "query.driver"),
        ("/api/sessions", {"agent": "x\x00"}, "query.agent"),
    ],
)
def test_out_of_range_queries_are_422_naming_the_parameter(
    client: TestClient, path: str, params: dict[str, str], field: str
) -> None:
    assert _field(client.get(path, params=params)) == field


def test_a_nul_in_a_path_is_404(client: TestClient) -> None:
    assert client.get("/api/sessions/ses%00x").status_code == 404


def test_a_stored_pid_no_process_can_have_never_breaks_health(
    client: TestClient, auth: dict[str, str]
) -> None:
    """Rows written before the bounds existed: /api/health and /metrics still answer."""
    engine = app_state(client.app).engine
    # PostgreSQL's INTEGER column never held more than 32 bits; SQLite took anything
    pids = [-1, 0] + ([4294967296, 2**62] if engine.dialect.name == "sqlite" else [])
    with session_scope(engine) as db:
        for i, pid in enumerate(pids):
            now = utcnow()
            db.add(
                Daemon(driver=f"d{i}", host="localhost", pid=pid, last_heartbeat_at=now, first_seen_at=now)
            )
    r = client.get("/api/health")
    assert r.status_code == 200, r.text
    assert {d["state"] for d in r.json()["daemons"]} == {"ok"}
    assert client.get("/metrics").status_code == 200


def test_a_finish_without_a_start_cannot_reach_before_year_one(
    client: TestClient, auth: dict[str, str]
) -> None:
    body = {**FINISH, "ended_at": "0001-01-02T00:00:00Z", "worker_wallclock_seconds": 5 * 86400}
    assert _field(client.post("/api/v1/cycles/finish", json=body, headers=auth)) == "body"


def test_bounds_still_take_what_dispatchers_send(client: TestClient, auth: dict[str, str]) -> None:
    body = {
        **FINISH,
        "candidates_count": 2**31 - 1,
        "worker_wallclock_seconds": 86400.5,
        "ended_at": "9999-12-31T00:00:00+14:00",
        "meta": {"deep": _nested(30), "big": 2**63 - 1, "small": -(2**63), "f": 1e300, "s": "\u00e9"},
    }
    r = client.post("/api/v1/cycles/finish", json=body, headers=auth)
    assert r.status_code == 200, r.text
    assert client.get("/api/cycles").status_code == 200
    assert client.get("/metrics").status_code == 200


def test_stored_non_finite_numbers_never_break_a_read(client: TestClient) -> None:
    """An older octel took `worker_wallclock_seconds: Infinity`; JSON has no infinity, so the
    answer says null instead of failing."""
    now = utcnow()
    with session_scope(app_state(client.app).engine) as db:
        db.add(
            Cycle(
                cycle_id="old-inf",
                driver="d",
                started_at=now,
                ended_at=now,
                terminal_state="done",
                worker_wallclock_seconds=float("inf"),
                updated_at=now,
            )
        )
    r = client.get("/api/cycles")
    assert r.status_code == 200, r.text
    assert r.json()["items"][0]["worker_wallclock_seconds"] is None
    assert client.get("/metrics").status_code == 200
