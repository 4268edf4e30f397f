"""A real Prometheus scrapes a live `octel serve`; every dashboard query and alert returns data.

The store is seeded before the server starts (so every counter series exists), then grows through
the live API and the archiver's counters while Prometheus watches, so rates and increases move.
"""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from metrics_helpers import (
    RULES,
    alert_rules,
    bump,
    claude_result,
    dashboard_exprs,
    grafana_expr,
    seed_live,
    seed_session,
)
from realparts import free_port, require, which
from sqlalchemy.engine import Engine
from store_templates import migrate_by_copy

from archiver.redact import Redactor
from telemetry.services.ingest import ingest
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.timeutil import utcnow

pytestmark = pytest.mark.prometheus

RED = Redactor(b"k" * 32)  # every stored input passes a redactor
TOKEN = "e2e-token-0123456789abcdef"
HOST = socket.gethostname()
SESSION_TOKENS = {"input": 100, "output": 50, "reasoning": 5, "cache_read": 900, "cache_write": 10}
RUN_TOKENS = {
    "input_tokens": 10,
    "output_tokens": 20,
    "cache_read_input_tokens": 300,
    "cache_creation_input_tokens": 40,
}


def _wait(what: str, ok: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if ok():
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def _stop(p: subprocess.Popen[bytes]) -> None:
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=10)


@pytest.fixture
def sleeper() -> Iterator[int]:
    """A live process standing in for a long-running worker."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    try:
        yield p.pid
    finally:
        _stop(p)  # type: ignore[arg-type]


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _finish(db: Any, cid: str, state: str, secs: float) -> None:
    start = utcnow() - timedelta(seconds=secs)
    ingest.begin_cycle(
        db, ingest.CycleBegin(cycle_id=cid, driver="review", started_at=start), utcnow(), redactor=RED
    )
    ingest.finish_cycle(
        db,
        ingest.CycleFinish(
            cycle_id=cid, driver="review", terminal_state=state, worker_outcome="merged", ended_at=utcnow()
        ),
        utcnow(),
        redactor=RED,
    )


def _seed_before_start(url: str, live_pid: int) -> None:
    """Every series exists before the first scrape, so later growth shows as a rate."""
    migrate_by_copy(url)  # a copy of the migrated template: `upgrade` finds it at head
    engine = make_engine(url)
    upgrade(engine)
    stale = utcnow() - timedelta(seconds=1200)
    with session_scope(engine) as db:
        _finish(db, "seed-done", "done", 40)
        _finish(db, "seed-failed", "failed", 700)
        ingest.begin_cycle(db, ingest.CycleBegin(cycle_id="long-1", driver="long"), utcnow(), redactor=RED)
        beats = [
            ("long", HOST, live_pid, stale, "long-1"),  # running long worker
            ("gone", HOST, _dead_pid(), stale, None),  # daemon down
            ("remote", "remote-host", 4242, stale, None),  # heartbeat stale, liveness unknown
            ("review", HOST, live_pid, utcnow(), None),  # healthy
        ]
        for driver, host, pid, at, cycle in beats:
            beat = ingest.HeartbeatIn(driver=driver, host=host, pid=pid, at=at, in_flight_cycle_id=cycle)
            ingest.heartbeat(db, beat, utcnow(), redactor=RED)
        run = claude_result("run-0", "claude-sonnet-4-5", 0.5, RUN_TOKENS)
        ingest.add_agent_run(db, ingest.AgentRunIn(agent="impl", result=run), utcnow(), redactor=RED)
    _archive_side(engine, "ses_seed", 0.5, "healthy")
    seed_live(engine)  # an ask, a quiet busy session and a retry storm, twenty minutes old
    engine.dispose()


def _archive_side(engine: Engine, sid: str, cost: float, verdict: str) -> None:
    """An archived session with a doom-loop finding of ``verdict``, and one more of each
    counter the archiver, the exporter and the watcher's rules move."""
    seed_session(
        engine,
        sid,
        agent="build",
        model="gpt-5",
        tokens=SESSION_TOKENS,
        cost=cost,
        findings={"doom_loop": verdict},
    )
    bump(engine, "archive_failures_total", {"error_kind": "timeout"}, 1)
    bump(engine, "otel_spans_exported_total", {}, 40)
    bump(engine, "otel_spans_dropped_total", {}, 3)
    bump(engine, "otel_trees_dropped_total", {"reason": "queue_full"}, 1)
    bump(engine, "trees_lost_total", {"reason": "incomplete"}, 1)
    bump(engine, "actions_total", {"rule": "deny_asks_after", "outcome": "done"}, 1)
    bump(engine, "alert_deliveries_total", {"channel": "webhook_json", "outcome": "sent"}, 2)
    bump(engine, "alert_deliveries_dropped_total", {}, 1)
    bump(engine, "opencode_sessions_archived_total", {"generation": "2"}, 1)


def _grow(octel: httpx.Client, url: str) -> None:
    """What happens while Prometheus watches: cycles fail, money burns, a session gets stuck."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for i in range(8):
        cid = f"w{i}"
        start = (utcnow() - timedelta(seconds=30 + 100 * i)).isoformat()
        begin = {"cycle_id": cid, "driver": "review", "started_at": start}
        assert octel.post("/api/v1/cycles/begin", json=begin).status_code == 401  # no token, no write
        assert octel.post("/api/v1/cycles/begin", json=begin, headers=auth).is_success
        finish = {
            "cycle_id": cid,
            "driver": "review",
            "terminal_state": "failed" if i < 5 else "done",
            "worker_outcome": "merged",
        }
        assert octel.post("/api/v1/cycles/finish", json=finish, headers=auth).is_success
    run = claude_result("run-1", "claude-sonnet-4-5", 10.0, RUN_TOKENS)
    assert octel.post("/api/v1/agent-runs", json={"agent": "impl", "result": run}, headers=auth).is_success
    engine = make_engine(url)
    _archive_side(engine, "ses_stuck", 30.0, "stuck")
    engine.dispose()


def _start_octel(tmp: Path, url: str, port: int) -> subprocess.Popen[bytes]:
    # a quota window the seeded Claude run's spend half uses: its three series have values
    quotas = tmp / "budgets.json"
    window = {"provider": "anthropic", "window": "monthly", "reset_day": 1, "limit_usd": 1.0}
    quotas.write_text(json.dumps({"quotas": [window]}), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OCTEL_")}
    env |= {
        "OCTEL_DATA_DIR": str(tmp / "data"),
        "OCTEL_DATABASE_URL": url,
        "OCTEL_INGEST_TOKEN": TOKEN,
        "OCTEL_LONG_WORKER_SECONDS": "600",
        "OCTEL_BUDGETS_FILE": str(quotas),
    }
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "web.app:create_app"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--log-level", "warning"]
    return subprocess.Popen(cmd, env=env, cwd=tmp)


def _start_prometheus(exe: str, tmp: Path, targets: list[str], port: int) -> subprocess.Popen[bytes]:
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "octel", "static_configs": [{"targets": targets}]}],
    }
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    cmd = [
        exe,
        f"--config.file={tmp / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    return subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _query(prom: httpx.Client, expr: str) -> list[dict[str, Any]]:
    r = prom.get("/api/v1/query", params={"query": expr})
    body = r.json()
    assert r.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _finite(result: list[dict[str, Any]]) -> list[float]:
    return [float(s["value"][1]) for s in result if math.isfinite(float(s["value"][1]))]


def test_dashboard_and_alerts_against_a_real_prometheus(tmp_path: Path, sleeper: int) -> None:
    exe = which("prometheus")
    require(exe is not None, "prometheus", "apt-get install prometheus")
    assert exe is not None
    url = f"sqlite:///{tmp_path / 'octel.db'}"
    _seed_before_start(url, sleeper)
    ports: set[int] = set()
    while len(ports) < 3:
        ports.add(free_port())
    octel_port, prom_port, dead_port = sorted(ports)
    procs = [_start_octel(tmp_path, url, octel_port)]
    octel = httpx.Client(base_url=f"http://127.0.0.1:{octel_port}", timeout=10)
    prom = httpx.Client(base_url=f"http://127.0.0.1:{prom_port}", timeout=10)
    try:
        _wait("octel serve", lambda: octel.get("/metrics").status_code == 200)
        targets = [f"127.0.0.1:{octel_port}", f"127.0.0.1:{dead_port}"]  # the second never answers
        procs.append(_start_prometheus(exe, tmp_path, targets, prom_port))
        _wait("prometheus ready", lambda: prom.get("/-/ready").status_code == 200)
        me = f'instance="127.0.0.1:{octel_port}"'
        scrapes = f"count_over_time(octel_store_up{{{me}}}[1m])"
        _wait("three scrapes", lambda: sum(_finite(_query(prom, scrapes))) >= 3)

        _grow(octel, url)
        total = 'sum(octel_cycles_total{driver="review"})'
        _wait("the new cycles scraped", lambda: _finite(_query(prom, total)) == [10.0])
        time.sleep(3)  # a few more scrapes and rule evaluations past the change

        for expr in dashboard_exprs():
            result = _query(prom, grafana_expr(expr))
            assert _finite(result), f"dashboard query returned no data: {expr}"
        for rule in alert_rules():
            assert _query(prom, rule["expr"]), f"{rule['alert']}: expression returned no data"
        groups = prom.get("/api/v1/rules").json()["data"]["groups"]
        loaded = {r["name"]: r for g in groups for r in g["rules"]}
        assert set(loaded) == {r["alert"] for r in alert_rules()}
        for name, r in loaded.items():
            assert r["health"] == "ok" and not r.get("lastError"), (name, r.get("lastError"))
        # The values an operator acts on.
        long = _query(prom, f'octel_running_long_worker{{driver="long",{me}}}')
        assert _finite(long) == [1.0]
        up = _query(prom, f'octel_daemon_up{{driver="gone",{me}}}')
        assert _finite(up) == [0.0]
        asks = _query(prom, f'octel_live_sessions{{state="waiting_permission",{me}}}')
        assert _finite(asks) == [1.0]
    finally:
        octel.close()
        prom.close()
        for p in reversed(procs):
            _stop(p)
