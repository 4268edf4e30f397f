"""`/metrics` through the real app and API, on SQLite and on a real PostgreSQL."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from metrics_helpers import bump, claude_result, parse, seed_session, value
from prometheus_client import generate_latest
from sqlalchemy import create_engine
from store_templates import migrate_by_copy

from telemetry.metrics.catalogue import CATALOGUE
from telemetry.settings import Settings
from telemetry.timeutil import utcnow
from web.app import create_app
from web.app_state import app_state
from web.metrics import StoreCollector, app_metrics


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


def _scrape(client: TestClient) -> tuple[dict, dict]:  # type: ignore[type-arg]
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    return parse(r.text)


def _cycle(client: TestClient, auth: dict[str, str], cid: str, state: str, outcome: str, secs: float) -> None:
    start = utcnow() - timedelta(hours=1)
    begin = {"cycle_id": cid, "driver": "review", "started_at": start.isoformat()}
    assert client.post("/api/v1/cycles/begin", json=begin, headers=auth).status_code == 201
    finish = {
        "cycle_id": cid,
        "driver": "review",
        "terminal_state": state,
        "worker_outcome": outcome,
        "ended_at": (start + timedelta(seconds=secs)).isoformat(),
    }
    assert client.post("/api/v1/cycles/finish", json=finish, headers=auth).status_code == 200


def test_values_after_ingestion_through_the_api(client: TestClient, auth: dict[str, str]) -> None:
    _cycle(client, auth, "c1", "done", "merged", 42.0)
    _cycle(client, auth, "c2", "done", "merged", 400.0)
    _cycle(client, auth, "c3", "failed", "crashed", 7000.0)
    run = claude_result(
        "u1",
        "claude-sonnet-4-5",
        0.25,
        {
            "input_tokens": 10,
            "output_tokens": 20,
            "cache_read_input_tokens": 30,
            "cache_creation_input_tokens": 40,
        },
    )
    assert (
        client.post("/api/v1/agent-runs", json={"agent": "impl", "result": run}, headers=auth).status_code
        == 201
    )
    seed_session(
        app_state(client.app).engine,
        "ses_1",
        agent="build",
        model="gpt-5",
        tokens={"input": 100, "output": 50, "reasoning": 5, "cache_read": 900, "cache_write": 10},
        cost=1.5,
        findings={"doom_loop": "stuck"},
    )
    bump(app_state(client.app).engine, "archive_failures_total", {"error_kind": "timeout"}, 2)

    s, fams = _scrape(client)
    review = {"driver": "review"}
    assert value(s, "octel_cycles_total", **review, terminal_state="done", worker_outcome="merged") == 2
    assert value(s, "octel_cycles_total", **review, terminal_state="failed", worker_outcome="crashed") == 1
    assert value(s, "octel_cycle_duration_seconds_count", **review) == 3
    assert value(s, "octel_cycle_duration_seconds_sum", **review) == pytest.approx(7442.0)
    assert value(s, "octel_cycle_duration_seconds_bucket", **review, le="60.0") == 1
    assert value(s, "octel_cycle_duration_seconds_bucket", **review, le="600.0") == 2
    assert value(s, "octel_cycle_duration_seconds_bucket", **review, le="3600.0") == 2
    assert value(s, "octel_cycle_duration_seconds_bucket", **review, le="+Inf") == 3
    assert value(s, "octel_cycle_duration_seconds_bucket", **review, le="1.0") == 0
    sonnet = {"agent": "impl", "model": "claude-sonnet-4-5"}
    assert value(s, "octel_agent_runs_total", **sonnet, outcome="success") == 1
    assert value(s, "octel_agent_run_cost_usd_total", **sonnet) == pytest.approx(0.25)
    assert value(s, "octel_agent_run_tokens_total", **sonnet, kind="cache_read") == 30
    assert value(s, "octel_agent_run_tokens_total", **sonnet, kind="cache_write") == 40
    gpt = {"agent": "build", "model": "gpt-5", "source": "opencode"}
    assert value(s, "octel_session_tokens_total", **gpt, kind="reasoning") == 5
    assert value(s, "octel_session_tokens_total", **gpt, kind="cache_read") == 900
    assert value(s, "octel_session_cost_usd_total", **gpt) == pytest.approx(1.5)
    assert value(s, "octel_sessions_archived_total", agent="build", source="opencode") == 1
    assert value(s, "octel_findings_total", detector="doom_loop", verdict="stuck") == 1
    assert value(s, "octel_findings_total", detector="doom_loop", verdict="suspect") == 0
    assert value(s, "octel_archive_failures_total", error_kind="timeout") == 2
    assert value(s, "octel_store_up") == 1
    assert value(s, "octel_long_worker_threshold_seconds") == 600
    # Every family is announced with the catalogue's help text, counters without `_total` twice.
    for m in CATALOGUE:
        base = m.name.removesuffix("_total") if m.kind == "counter" else m.name
        assert fams[base] == (m.kind, m.help)
    octel = {name for name, _ in s if name.startswith("octel_")}
    assert not any(n.endswith("_created") for n in octel)


def test_counters_survive_restarts_and_only_go_up(settings: Settings, auth: dict[str, str]) -> None:
    with TestClient(create_app(settings)) as c:
        _cycle(c, auth, "c1", "done", "merged", 10)
        first, _ = _scrape(c)
    with TestClient(create_app(settings)) as c:  # a restart: nothing in process memory survives
        again, _ = _scrape(c)
        _cycle(c, auth, "c2", "done", "merged", 10)
        later, _ = _scrape(c)
    labels = {"driver": "review", "terminal_state": "done", "worker_outcome": "merged"}
    assert value(first, "octel_cycles_total", **labels) == 1
    assert value(again, "octel_cycles_total", **labels) == 1
    assert value(later, "octel_cycles_total", **labels) == 2
    for (name, lbl), v in again.items():
        counter = name.endswith(("_total", "_bucket", "_count", "_sum"))
        if counter and name.startswith("octel_") and not name.startswith("octel_http_"):
            assert later[(name, lbl)] >= v, name


@pytest.fixture
def live_pid() -> Iterator[int]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_running_long_worker_flag(client: TestClient, auth: dict[str, str], live_pid: int) -> None:
    host = socket.gethostname()
    stale = (utcnow() - timedelta(seconds=1200)).isoformat()
    fresh = utcnow().isoformat()
    # driver: (pid, heartbeat, cycle in flight)
    daemons = {
        "long": (live_pid, stale, True),
        "fresh": (live_pid, fresh, True),
        "idle": (live_pid, stale, False),
        "dead": (_dead_pid(), stale, True),
    }
    for driver, (pid, at, in_flight) in daemons.items():
        beat = {"driver": driver, "host": host, "pid": pid, "at": at}
        if in_flight:
            cid = f"{driver}-1"
            r = client.post("/api/v1/cycles/begin", json={"cycle_id": cid, "driver": driver}, headers=auth)
            assert r.status_code == 201
            beat["in_flight_cycle_id"] = cid
        assert client.post("/api/v1/heartbeat", json=beat, headers=auth).status_code == 200
    s, _ = _scrape(client)
    flag = {d: value(s, "octel_running_long_worker", driver=d, host=host) for d in daemons}
    assert flag == {"long": 1, "fresh": 0, "idle": 0, "dead": 0}
    up = {d: value(s, "octel_daemon_up", driver=d, host=host) for d in daemons}
    assert up == {"long": 1, "fresh": 1, "idle": 1, "dead": 0}
    assert value(s, "octel_daemon_state", driver="long", host=host, state="running_long_worker") == 1
    assert value(s, "octel_daemon_state", driver="dead", host=host, state="down") == 1
    assert value(s, "octel_daemon_cycle_in_flight", driver="fresh", host=host) == 1
    assert value(s, "octel_daemon_cycle_in_flight", driver="idle", host=host) == 0
    assert value(s, "octel_cycles_in_flight", driver="long") == 1
    assert value(s, "octel_daemon_heartbeat_timestamp_seconds", driver="idle", host=host) == pytest.approx(
        utcnow().timestamp() - 1200, abs=60
    )
    # The worker finishes: the flag drops on the next scrape.
    done = {"cycle_id": "long-1", "driver": "long", "terminal_state": "done"}
    assert client.post("/api/v1/cycles/finish", json=done, headers=auth).status_code == 200
    s, _ = _scrape(client)
    assert value(s, "octel_running_long_worker", driver="long", host=host) == 0
    assert ("octel_cycles_in_flight", frozenset({("driver", "long")})) not in s


def test_heartbeat_files_are_read_at_scrape_time(tmp_path: Path, store_url: str) -> None:
    beat = tmp_path / "beats" / "review.hb"
    beat.parent.mkdir()
    beat.write_text("12345")
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=store_url,
        ingest_token="test-token-0123456789",
        heartbeat_files=f"review={tmp_path}/beats/*.hb",
        _env_file=None,
    )
    with TestClient(create_app(settings)) as c:
        s, _ = _scrape(c)
    ts = value(s, "octel_daemon_heartbeat_timestamp_seconds", driver="review", host=socket.gethostname())
    assert ts == pytest.approx(beat.stat().st_mtime, abs=1e-3)


def test_request_metrics_use_route_templates(client: TestClient) -> None:
    client.app.add_api_route("/things/{thing_id}", lambda thing_id: {"id": thing_id})  # type: ignore[attr-defined]
    for path in ("/things/a", "/things/b", "/secret/../etc/passwd", "/no/such/page"):
        client.get(path)
    client.get("/api/cycles?cursor=bogus")
    s, _ = _scrape(client)
    routes = {dict(lbl)["route"] for name, lbl in s if name == "octel_http_requests_total"}
    assert routes == {"/things/{thing_id}", "unmatched", "/api/cycles"}
    assert value(s, "octel_http_requests_total", method="GET", route="/things/{thing_id}", status="200") == 2
    assert value(s, "octel_http_requests_total", method="GET", route="unmatched", status="404") == 2
    assert value(s, "octel_http_requests_total", method="GET", route="/api/cycles", status="422") == 1
    assert value(s, "octel_http_request_duration_seconds_count", method="GET", route="unmatched") == 2
    # The scrape itself shows up on the next one.
    s, _ = _scrape(client)
    assert value(s, "octel_http_requests_total", method="GET", route="/metrics", status="200") >= 1


def test_an_unreachable_store_is_reported_not_raised(client: TestClient) -> None:
    broken = create_engine("sqlite:////proc/octel-no-such-dir/octel.db")
    app_state(client.app).engine = broken
    r = client.get("/metrics")
    assert r.status_code == 200
    s, _ = parse(r.text)
    assert value(s, "octel_store_up") == 0
    assert not any(n.startswith(("octel_daemon", "octel_cycles")) for n, _ in s)
    broken.dispose()


def test_two_instances_on_one_store_agree(settings: Settings, auth: dict[str, str]) -> None:
    """Several octel instances behind one store never double a counter: the store is the truth."""
    with TestClient(create_app(settings)) as a, TestClient(create_app(settings)) as b:
        _cycle(a, auth, "c1", "done", "merged", 10)
        _cycle(b, auth, "c2", "failed", "crashed", 20)
        sa, _ = _scrape(a)
        sb, _ = _scrape(b)
    fleet = {k: v for k, v in sa.items() if k[0].startswith("octel_cycle")}
    assert fleet == {k: v for k, v in sb.items() if k[0].startswith("octel_cycle")}
    assert value(sa, "octel_cycle_duration_seconds_count", driver="review") == 2


def test_each_app_has_its_own_registry(settings: Settings) -> None:
    from prometheus_client import REGISTRY

    app = create_app(settings)
    collector = StoreCollector(app)
    # describe() names every family from the store without one (the lifespan has not run: no
    # engine yet); this process's request metrics are prometheus-client's own Counter and
    # Histogram on the same registry.
    assert [f.name for f in collector.describe()] == [
        m.name.removesuffix("_total") if m.kind == "counter" else m.name
        for m in CATALOGUE
        if m.source != "process"
    ]
    names = app_metrics(app).registry._names_to_collectors
    assert {m.name for m in CATALOGUE} <= set(names)
    assert app_metrics(app) is app_metrics(app)
    assert app_metrics(app).registry is not app_metrics(create_app(settings)).registry
    assert not any(n.startswith("octel_") for n in REGISTRY._names_to_collectors)
    s, _ = parse(generate_latest(app_metrics(app).registry).decode())
    assert value(s, "octel_store_up") == 0
