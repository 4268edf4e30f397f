"""Everything that enters octel passes the archiver's redactor before it is stored: ingest
fields, Claude results, heartbeats (HTTP and files), imported dispatcher rows. The store's
folder and files are private to their owner."""

from __future__ import annotations

import json
import socket
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import select

from archiver.redact import Redactor, load_key
from telemetry.services.ingest.dispatch_import import import_dispatch_db
from telemetry.services.ingest.heartbeat_files import refresh_heartbeat_files
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import AgentRun, Cycle, Daemon
from telemetry.timeutil import utcnow
from web.app import create_app
from web.app_state import app_state

CONFIGURED = "acct-7731-0099-4412"
GITHUB = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TOKEN = {"Authorization": "Bearer test-token-0123456789"}


@pytest.fixture
def octel(settings: Settings) -> Iterator[TestClient]:
    s = settings.model_copy(update={"redact_values": CONFIGURED})
    with TestClient(create_app(s)) as c:
        yield c


def _placeholder(settings: Settings, rule: str, secret: str) -> str:
    """The placeholder the archiver would write: same key, same rule."""
    return Redactor(load_key(settings.redact_key)).placeholder(rule, secret.encode()).decode()


def _everything(client: TestClient) -> str:
    with session_scope(app_state(client.app).engine, write=False) as db:
        rows = [
            *db.exec(select(Cycle)).all(),
            *db.exec(select(Daemon)).all(),
            *db.exec(select(AgentRun)).all(),
        ]
        return json.dumps([r.model_dump(mode="json") for r in rows])


def test_ingested_fields_are_redacted_before_they_are_stored(octel: TestClient, settings: Settings) -> None:
    begin = {
        "cycle_id": "c1",
        "driver": "review",
        "host": "h",
        "meta": {"env": {"GITHUB_TOKEN": GITHUB}, "note": f"account {CONFIGURED}", "n": 3},
    }
    assert octel.post("/api/v1/cycles/begin", json=begin, headers=TOKEN).status_code == 201
    finish = {
        "cycle_id": "c1",
        "driver": "review",
        "terminal_state": "failed",
        "error_kind": f"auth {GITHUB}",
        "worker_outcome": "crashed",
    }
    assert octel.post("/api/v1/cycles/finish", json=finish, headers=TOKEN).status_code == 200
    beat = {"driver": "review", "host": "h", "in_flight_cycle_id": f"cyc-{CONFIGURED}"}
    assert octel.post("/api/v1/heartbeat", json=beat, headers=TOKEN).status_code == 200
    result = {
        "type": "result",
        "subtype": "success",
        "uuid": "run-1",
        "result": f"pushed with {GITHUB}",
        "usage": {"input_tokens": 3},
    }
    run = {"task": f"rotate {CONFIGURED}", "agent": "claude", "result": json.dumps(result)}
    assert octel.post("/api/v1/agent-runs", json=run, headers=TOKEN).status_code == 201

    stored = _everything(octel)
    assert GITHUB not in stored and CONFIGURED not in stored
    assert _placeholder(settings, "github", GITHUB) in stored  # the archiver's placeholder
    served = octel.get("/api/cycles").text + octel.get("/api/health").text
    assert GITHUB not in served and CONFIGURED not in served
    assert json.loads(stored)[0]["raw"]["begin"]["meta"]["n"] == 3  # the shape is kept


def test_heartbeat_files_and_imported_rows_are_redacted(tmp_path: Path, settings: Settings) -> None:
    engine = make_engine(settings.db_url)
    upgrade(engine)
    red = Redactor(b"k" * 32, [CONFIGURED])
    beat = tmp_path / "review.hb"
    beat.write_text(json.dumps({"pid": 1, "cycle_id": f"cyc-{CONFIGURED}"}))
    src = tmp_path / "old.db"
    db = sqlite3.connect(src)
    db.execute(
        "CREATE TABLE dispatch_review_cycles (cycle_id TEXT, started_at TEXT, ended_at TEXT, "
        "terminal_state TEXT, error_kind TEXT, note TEXT)"
    )
    db.execute(
        "INSERT INTO dispatch_review_cycles VALUES (?,?,?,?,?,?)",
        ("rv-1", "2026-10-01T10:00:00Z", "2026-10-01T10:05:00Z", "failed", f"401 {GITHUB}", CONFIGURED),
    )
    db.commit()
    db.close()
    with session_scope(engine) as s:
        assert refresh_heartbeat_files(s, [("review", str(beat))], utcnow(), redactor=red) == 1
    report = import_dispatch_db(engine, src, utcnow(), red)
    assert report["totals"]["imported"] == 1
    with session_scope(engine, write=False) as s:
        stored = json.dumps(
            [r.model_dump(mode="json") for r in [*s.exec(select(Cycle)).all(), *s.exec(select(Daemon)).all()]]
        )
    engine.dispose()
    assert GITHUB not in stored and CONFIGURED not in stored
    assert red.placeholder("configured", CONFIGURED.encode()).decode() in stored


def test_a_placeholder_never_makes_a_value_too_long_for_its_column(octel: TestClient) -> None:
    finish = {
        "cycle_id": "c2",
        "driver": "review",
        "terminal_state": "failed",
        "error_kind": "x" * 180 + CONFIGURED,  # 199 characters; the placeholder is longer
    }
    r = octel.post("/api/v1/cycles/finish", json=finish, headers=TOKEN)
    assert r.status_code == 200, r.text
    assert len(r.json()["cycle"]["error_kind"]) <= 200 and CONFIGURED not in r.text


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_the_data_folder_and_database_files_are_private(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    s = Settings(data_dir=data, ingest_token="test-token-0123456789", _env_file=None)  # type: ignore[call-arg]
    with TestClient(create_app(s)) as c:
        c.post("/api/v1/heartbeat", json={"driver": "d", "host": socket.gethostname()}, headers=TOKEN)
        assert _mode(data) == 0o700
        for name in ("octel.db", "octel.db-wal", "octel.db-shm"):
            assert (data / name).exists(), name
            assert _mode(data / name) == 0o600, name


def test_an_older_store_is_made_private_when_opened(tmp_path: Path) -> None:
    db = tmp_path / "old" / "octel.db"
    db.parent.mkdir()
    for name in ("octel.db", "octel.db-wal", "octel.db-shm"):
        (db.parent / name).touch(mode=0o644)
        (db.parent / name).chmod(0o644)
    make_engine(f"sqlite:///{db}").dispose()
    assert [_mode(db.parent / n) for n in ("octel.db", "octel.db-wal", "octel.db-shm")] == [0o600] * 3
