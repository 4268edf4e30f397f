"""`running_long_worker` and the other daemon states, with a real child process for liveness."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st
from store_templates import migrate_by_copy

from telemetry.queries.health import daemon_state, local_liveness
from telemetry.settings import Settings
from telemetry.timeutil import utcnow
from web.app import create_app

HOST = socket.gethostname()


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    migrate_by_copy(settings.db_url)  # at head already: the app's upgrade is the one-query check
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def _setup(client: TestClient, auth: dict[str, str], pid: int, beat_age_s: float, in_flight: bool) -> None:
    now = utcnow()
    client.post(
        "/api/v1/cycles/begin",
        json={
            "cycle_id": "long-1",
            "driver": "impl",
            "candidates_count": 4,
            "session_id": "ses_x",
            "started_at": (now - timedelta(seconds=1500)).isoformat(),
        },
        headers=auth,
    )
    beat = {
        "driver": "impl",
        "host": HOST,
        "pid": pid,
        "at": (now - timedelta(seconds=beat_age_s)).isoformat(),
    }
    if in_flight:
        beat["in_flight_cycle_id"] = "long-1"
    assert client.post("/api/v1/heartbeat", json=beat, headers=auth).status_code == 200


def _daemon(client: TestClient) -> dict[str, object]:
    daemons = client.get("/api/health").json()["daemons"]
    assert len(daemons) == 1
    d: dict[str, object] = daemons[0]
    return d


def test_stale_heartbeat_live_process_in_flight_is_a_long_worker(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    _setup(client, auth, child.pid, beat_age_s=900, in_flight=True)
    d = _daemon(client)
    assert d["state"] == "running_long_worker"
    assert d["heartbeat_age_s"] >= 900  # type: ignore[operator]
    flight = d["in_flight_cycle"]
    assert isinstance(flight, dict)
    assert (flight["cycle_id"], flight["session_id"], flight["candidates_count"]) == ("long-1", "ses_x", 4)
    assert flight["elapsed_s"] >= 1500


def test_same_with_the_process_killed_is_down(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    _setup(client, auth, child.pid, beat_age_s=900, in_flight=True)
    child.kill()
    child.wait()
    assert _daemon(client)["state"] == "down"


def test_fresh_heartbeat_is_ok(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    _setup(client, auth, child.pid, beat_age_s=5, in_flight=True)
    assert _daemon(client)["state"] == "ok"


def test_finished_cycle_is_no_longer_in_flight(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    _setup(client, auth, child.pid, beat_age_s=900, in_flight=True)
    client.post(
        "/api/v1/cycles/finish",
        json={"cycle_id": "long-1", "driver": "impl", "terminal_state": "done"},
        headers=auth,
    )
    d = _daemon(client)
    assert (d["state"], d["in_flight_cycle"]) == ("unknown", None)


def test_remote_daemon_liveness_is_unknown(client: TestClient, auth: dict[str, str]) -> None:
    now = utcnow()
    client.post("/api/v1/cycles/begin", json={"cycle_id": "r1", "driver": "impl"}, headers=auth)
    client.post(
        "/api/v1/heartbeat",
        json={
            "driver": "impl",
            "host": "elsewhere.example",
            "pid": 1,
            "in_flight_cycle_id": "r1",
            "at": (now - timedelta(seconds=900)).isoformat(),
        },
        headers=auth,
    )
    assert _daemon(client)["state"] == "unknown"


def test_local_liveness_on_real_processes() -> None:
    assert local_liveness(HOST, os.getpid()) == "alive"
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert local_liveness(HOST, proc.pid) == "dead"
    assert local_liveness("another-host", os.getpid()) == "unknown"


@given(
    age=st.floats(0, 1e6),
    threshold=st.floats(1, 1e5),
    in_flight=st.booleans(),
    live=st.sampled_from(["alive", "dead", "unknown"]),
)
def test_state_rule(age: float, threshold: float, in_flight: bool, live: str) -> None:
    state, _ = daemon_state(age, threshold, in_flight, live)  # type: ignore[arg-type]
    assert (state == "running_long_worker") == (in_flight and age > threshold and live == "alive")
    assert (state == "down") == (live == "dead")
    assert (state == "ok") == (live != "dead" and age <= threshold)


def test_heartbeat_file_makes_the_daemon_fresh(tmp_path: Path, store_url: str) -> None:
    beat = tmp_path / "hb" / "review.heartbeat"
    beat.parent.mkdir()
    beat.write_text(str(os.getpid()))
    old = time.time() - 3600
    os.utime(beat, (old, old))
    s = Settings(
        data_dir=tmp_path / "data",
        database_url=store_url,
        ingest_token="t" * 20,  # type: ignore[arg-type]
        heartbeat_files=f"review={tmp_path}/hb/*.heartbeat",
        long_worker_seconds=600,
        _env_file=None,
    )  # type: ignore[call-arg]
    with TestClient(create_app(s)) as c:
        d = c.get("/api/health").json()["daemons"][0]
        assert (d["driver"], d["source"], d["pid"], d["state"]) == ("review", "file", os.getpid(), "unknown")
        assert d["heartbeat_age_s"] >= 3600
        beat.touch()
        d = c.get("/api/health").json()["daemons"][0]
        assert d["state"] == "ok"
        assert d["heartbeat_age_s"] < 60


def test_a_driver_that_never_beat_is_listed_with_its_cycle(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    """The cycle table knows the driver is busy even though no heartbeat ever came."""
    begin = {"cycle_id": "quiet-1", "driver": "quiet", "host": HOST, "pid": child.pid, "session_id": "ses_q"}
    assert client.post("/api/v1/cycles/begin", json=begin, headers=auth).status_code == 201
    body = client.get("/api/health").json()
    (d,) = body["daemons"]
    assert (d["driver"], d["source"], d["state"], d["liveness"]) == ("quiet", "cycle", "unknown", "alive")
    assert d["in_flight_cycle"]["cycle_id"] == "quiet-1"
    assert d["in_flight_cycle"]["orphaned"] is False
    assert d["last_heartbeat_at"] is None and "no heartbeat" in d["reason"]
    assert (body["status"], body["cycles_in_flight"], body["cycles_orphaned"]) == ("unknown", 1, 0)
    child.kill()
    child.wait()
    body = client.get("/api/health").json()
    assert body["daemons"][0]["state"] == "down"
    assert (body["cycles_in_flight"], body["cycles_orphaned"]) == (0, 1)


def test_status_is_the_worst_state_with_counts(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    """One daemon down among healthy ones makes the fleet down, and its open cycle orphaned."""
    _setup(client, auth, child.pid, beat_age_s=900, in_flight=True)
    fresh = {"driver": "review", "host": HOST, "pid": os.getpid()}
    assert client.post("/api/v1/heartbeat", json=fresh, headers=auth).status_code == 200
    body = client.get("/api/health").json()
    assert body["status"] == "running_long_worker"
    assert body["counts"] == {"ok": 1, "running_long_worker": 1, "unknown": 0, "down": 0}
    child.kill()
    child.wait()
    body = client.get("/api/health").json()
    assert body["status"] == "down"
    assert body["counts"]["down"] == 1 and body["counts"]["ok"] == 1
    impl = next(d for d in body["daemons"] if d["driver"] == "impl")
    assert impl["in_flight_cycle"]["orphaned"] is True
    assert (body["cycles_in_flight"], body["cycles_orphaned"]) == (0, 1)
    listed = client.get("/api/cycles").json()["items"]
    assert [(c["cycle_id"], c["orphaned"]) for c in listed] == [("long-1", True)]
    (s,) = client.get("/api/cycles/summary").json()["drivers"]
    assert (s["in_flight"], s["orphaned"]) == (0, 1)


def test_an_empty_fleet_is_ok(client: TestClient) -> None:
    body = client.get("/api/health").json()
    assert (body["status"], body["daemons"], body["cycles_orphaned"]) == ("ok", [], 0)


def test_many_open_cycles_with_no_heartbeat_are_counted_not_listed(
    client: TestClient, auth: dict[str, str], child: subprocess.Popen[bytes]
) -> None:
    """A dead dispatcher's open cycles grow with history; health names the newest few per driver
    and counts the rest, and the fleet's counts still cover all of them."""
    now = utcnow()
    for i in range(12):
        begin = {
            "cycle_id": f"left-{i:02d}",
            "driver": "nightly",
            "host": HOST,
            "pid": child.pid,
            "started_at": (now - timedelta(minutes=60 - i)).isoformat(),
        }
        assert client.post("/api/v1/cycles/begin", json=begin, headers=auth).status_code == 201
    child.kill()
    child.wait()
    body = client.get("/api/health").json()
    listed = [d["in_flight_cycle"]["cycle_id"] for d in body["daemons"]]
    assert sorted(listed) == ["left-09", "left-10", "left-11"]  # the newest three
    (more,) = body["more_open_cycles"]
    assert (more["driver"], more["cycles"], more["orphaned"], more["in_flight"]) == ("nightly", 9, 9, 0)
    assert (body["status"], body["cycles_orphaned"], body["counts"]["down"]) == ("down", 12, 12)
    page = client.get(more["cycles_url"], params={"limit": 50}).json()["items"]
    assert len(page) == 12 and all(c["orphaned"] for c in page)
