"""A store that cannot answer is a 503 with `Retry-After` in the JSON envelope, never a bare 500
or a dropped connection, and the server answers again once the store is back: a real
PostgreSQL stopped and started by its postmaster's pid, and a real full disk (a small tmpfs
mounted here, as root) under the SQLite file."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pgserver
import pytest
from fastapi.testclient import TestClient
from realparts import require
from sqlalchemy import text

from telemetry.settings import Settings
from telemetry.store.db import make_engine
from web.app import create_app
from web.store_outage import store_outage

AUTH = {"Authorization": "Bearer test-token-0123456789"}


def _settings(data_dir: Path, url: str | None = None) -> Settings:
    return Settings(data_dir=data_dir, database_url=url, ingest_token="test-token-0123456789", _env_file=None)  # type: ignore[arg-type, call-arg]


def _assert_outage(r: httpx.Response, what: str) -> None:
    assert r.status_code == 503, (what, r.status_code, r.text)
    assert int(r.headers["retry-after"]) >= 1, what
    error = r.json()["error"]
    assert error["code"] == "store_unavailable" and error["message"] and error["fields"] == [], what


def _requests(c: TestClient, n: int) -> dict[str, httpx.Response]:
    """One answer of each kind: reads, health, a group-committed write, a fast-path write."""
    return {
        "health": c.get("/api/health"),
        "cycles": c.get("/api/cycles"),
        "heartbeat": c.post("/api/v1/heartbeat", json={"driver": "d", "host": f"h{n}"}, headers=AUTH),
        "begin": c.post(
            "/api/v1/cycles/begin",
            json={"cycle_id": f"c{n}", "driver": "d", "started_at": "2026-01-01T00:00:00Z"},
            headers=AUTH,
        ),
    }


def _until_all_answer(c: TestClient, n: int) -> None:
    """Requests until every kind answers 2xx again; meanwhile each answer is a 2xx or the 503."""
    for attempt in range(50):
        answers = _requests(c, n * 100 + attempt)
        for what, r in answers.items():
            if r.status_code >= 300:
                _assert_outage(r, what)
        if all(r.status_code < 300 for r in answers.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"not all answered again: { {k: r.status_code for k, r in answers.items()} }")


@contextlib.contextmanager
def _own_postgres() -> Iterator[str]:
    require(pgserver.pg_binaries() is not None, "PostgreSQL (initdb, pg_ctl)", pgserver.HOW)
    with pgserver.postgres_server() as url:
        yield pgserver.create_database(url)


def _postmaster(url: str) -> tuple[int, Path, list[str]]:
    """(pid, data folder, the command line it was started with) of the server behind `url`."""
    engine = make_engine(url)
    with engine.connect() as c:
        data = Path(c.execute(text("SHOW data_directory")).scalar_one())
    engine.dispose()
    pid = int((data / "postmaster.pid").read_text().split()[0])
    return pid, data, shlex.split((data / "postmaster.opts").read_text())


@pytest.mark.postgres
def test_a_postgresql_restart_is_a_503_then_the_server_answers_again(tmp_path: Path) -> None:
    restarted: subprocess.Popen[bytes] | None = None
    with (
        open(tmp_path / "restart.log", "ab") as log,
        _own_postgres() as url,
        TestClient(create_app(_settings(tmp_path / "data", url))) as c,
    ):
        _until_all_answer(c, 0)
        pid, data, argv = _postmaster(url)
        os.kill(pid, signal.SIGINT)  # a fast shutdown, as `pg_ctl restart` begins
        while (data / "postmaster.pid").exists():
            time.sleep(0.05)
        answers = _requests(c, 1)
        for what, r in answers.items():
            _assert_outage(r, what)
        assert answers["health"].json()["status"] == "store_unavailable"
        st = data.stat()
        restarted = subprocess.Popen(
            argv, stdout=log, stderr=log, start_new_session=True, user=st.st_uid, group=st.st_gid
        )
        _until_all_answer(c, 2)
        assert c.get("/api/health").json()["status"] != "store_unavailable"
    if restarted is not None:  # stopped with the server's folder, by the fixture
        restarted.wait(60)


def _mount_tmpfs(where: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs a tmpfs mounted here, which needs root")
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"could not mount a tmpfs: {done.stderr.decode().strip()}")


def _fill(where: Path) -> Path:
    """A file taking every free byte (unbuffered writes: a buffered close would fail too)."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_a_503_for_writes_then_they_succeed_again(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    _mount_tmpfs(disk, "16m")
    try:
        with TestClient(create_app(_settings(disk / "data"))) as c:
            _until_all_answer(c, 0)
            with sqlite3.connect(disk / "data" / "octel.db") as db:  # the next write must grow a file
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            filler = _fill(disk)
            refused: list[Any] = []
            for n in range(1, 200):  # until the write needs a page the disk does not have
                r = c.post(
                    "/api/v1/heartbeat",
                    json={"driver": "d", "host": f"host-{n:04d}-" + "x" * 200},
                    headers=AUTH,
                )
                if r.status_code != 200:
                    _assert_outage(r, f"heartbeat {n}")
                    refused.append(n)
                    break
            assert refused, "no write was refused on a full disk"
            begin = c.post(
                "/api/v1/cycles/begin",
                json={"cycle_id": "full", "driver": "d", "started_at": "2026-01-01T00:00:00Z"},
                headers=AUTH,
            )
            _assert_outage(begin, "begin")
            filler.unlink()
            _until_all_answer(c, 1)
            assert c.get("/api/cycles", params={"driver": "d"}).json()["items"]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_what_is_an_outage_and_what_is_not() -> None:
    from sqlalchemy.exc import IntegrityError, OperationalError

    assert store_outage(
        OperationalError("SELECT 1", {}, sqlite3.OperationalError("database or disk is full"))
    )
    assert store_outage(OSError(28, "No space left on device"))
    assert store_outage(ExceptionGroup("g", [OSError(28, "full")]))
    assert not store_outage(IntegrityError("INSERT", {}, Exception("duplicate")))
    assert not store_outage(ValueError("bad input"))
    assert not store_outage(OSError(2, "No such file"))
