"""One fleet rule for open cycles: `octel cycles list|summary --json`, `/api/cycles` and `octel why
CYCLE` say the same of a cycle whose daemon is dead (orphaned), and `why` says when its session
waits on an ask. The daemon's process is a real child, killed."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from octelrun import Octel
from storeseed import add, cycle

sys.path.insert(0, str(Path(__file__).parent.parent))  # live_seed
from live_seed import store_waiting_tree

from telemetry.settings import Settings
from telemetry.store.models import Daemon
from telemetry.timeutil import utcnow
from web.app import create_app

HOST = socket.gethostname()


@pytest.fixture
def dead_pid() -> int:
    """The pid of a process that ran and is gone (reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.fixture
def alive_pid() -> Iterator[int]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def api(octel: Octel) -> Iterator[TestClient]:
    settings = Settings(data_dir=octel.data_dir, database_url=octel.url, _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(settings)) as c:
        yield c


def _fleet(octel: Octel, dead_pid: int, alive_pid: int) -> None:
    """impl's daemon died with impl-7 open; review's daemon lives, its beat stale, review-3 open;
    impl-6 ended."""
    now = utcnow()
    ago = now - timedelta(minutes=25)
    add(
        octel.engine,
        Daemon(
            driver="impl",
            host=HOST,
            pid=dead_pid,
            last_heartbeat_at=ago,
            first_seen_at=ago,
            in_flight_cycle_id="impl-7",
        ),
        Daemon(
            driver="review",
            host=HOST,
            pid=alive_pid,
            last_heartbeat_at=ago,
            first_seen_at=ago,
            in_flight_cycle_id="review-3",
        ),
        cycle(
            "impl-6",
            "impl",
            host=HOST,
            started_at=ago - timedelta(hours=1),
            ended_at=ago,
            terminal_state="completed",
            updated_at=ago,
        ),
        cycle("impl-7", "impl", host=HOST, pid=dead_pid, started_at=ago, updated_at=ago),
        cycle("review-3", "review", host=HOST, pid=alive_pid, started_at=ago, updated_at=ago),
    )


def test_cli_and_api_agree_on_orphaned(octel: Octel, api: TestClient, dead_pid: int, alive_pid: int) -> None:
    _fleet(octel, dead_pid, alive_pid)
    listed = {c["cycle_id"]: c for c in octel.json("cycles", "list")["items"]}
    served = {c["cycle_id"]: c for c in api.get("/api/cycles").json()["items"]}
    keys = ("orphaned", "long_running", "daemon_state")
    assert {k: [c[x] for x in keys] for k, c in listed.items()} == {
        "impl-7": [True, False, "down"],
        "review-3": [False, True, "running_long_worker"],
        "impl-6": [False, False, None],
    }
    assert {k: [c[x] for x in keys] for k, c in served.items()} == {
        k: [c[x] for x in keys] for k, c in listed.items()
    }
    summary = {d["driver"]: d for d in octel.json("cycles", "summary")["drivers"]}
    served_summary = {d["driver"]: d for d in api.get("/api/cycles/summary").json()["drivers"]}
    for drv in ("impl", "review"):
        got = [summary[drv][k] for k in ("in_flight", "orphaned", "long_running")]
        assert got == [served_summary[drv][k] for k in ("in_flight", "orphaned", "long_running")]
    assert [summary["impl"][k] for k in ("in_flight", "orphaned")] == [0, 1]
    assert [summary["review"][k] for k in ("in_flight", "long_running")] == [1, 1]
    table = octel("cycles", "list").stdout
    assert "orphaned" in table and "long-running" in table


def test_why_an_orphaned_cycle_says_its_daemon_is_down(octel: Octel, dead_pid: int, alive_pid: int) -> None:
    _fleet(octel, dead_pid, alive_pid)
    got = octel.json("why", "impl-7")
    assert (got["code"], got["verdict"]) == ("orphaned", "orphaned")
    assert "daemon is down" in got["evidence"][0]["detail"] and "never finish" in got["summary"]
    out = octel("why", "impl-7").stdout
    assert "still running" not in out and "has not finished" not in out
    long = octel.json("why", "review-3")
    assert long["code"] == "running" and "long-running worker" in long["evidence"][0]["detail"]


def test_why_a_cycle_whose_session_waits_on_an_ask_says_so(
    octel: Octel, dead_pid: int, alive_pid: int
) -> None:
    child, _ = store_waiting_tree(octel.engine)
    _fleet(octel, dead_pid, alive_pid)
    got = octel.json("why", "review-3")
    assert got["code"] == "running"  # its session is not review-3's
    add(octel.engine, cycle("impl-8", "impl", host=HOST, started_at=utcnow(), session_id=child))
    asked = octel.json("why", "impl-8")
    assert asked["code"] == "permission_wait", asked
    assert any("bash ask" in e["detail"] and child in e["detail"] for e in asked["evidence"])
