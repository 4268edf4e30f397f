"""Two `octel serve` instances of two worker processes each on one PostgreSQL: the same
answers, no write lost or counted twice."""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from liveserver import OctelProcess, live_octel
from session_records import session_record
from sqlmodel import func, select

from archiver.record import SessionRecord
from archiver.redact import Redactor
from telemetry.services.index.indexing import index_records
from telemetry.store.aggregates import read_all
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Aggregate, Cycle, SessionIndex

pytestmark = pytest.mark.postgres

TOKEN = {"Authorization": "Bearer test-token-0123456789"}
WRITERS, PER_WRITER = 8, 150
RACING, UNBEGUN = 4, 3


def _writer(bases: list[str], w: int) -> int:
    """Begin on one instance, finish on the other (a load balancer does not keep affinity)."""
    created = 0
    clients = [httpx.Client(base_url=b, headers=TOKEN, timeout=60) for b in bases]
    try:
        for i in range(PER_WRITER):
            cid = f"w{w}-c{i}"
            r = clients[(w + i) % 2].post(
                "/api/v1/cycles/begin", json={"cycle_id": cid, "driver": f"d{w % 3}"}
            )
            assert r.status_code in (200, 201), r.text
            created += r.status_code == 201
            if i % 3 == 0:
                body = {"cycle_id": cid, "driver": f"d{w % 3}", "terminal_state": "done"}
                assert clients[(w + i + 1) % 2].post("/api/v1/cycles/finish", json=body).status_code == 200
    finally:
        for c in clients:
            c.close()
    return created


def _race_answers(
    bases: list[str], path: str, bodies: list[dict[str, object]], copies: int
) -> list[tuple[int, dict[str, object]]]:
    """Send every body `copies` times to each instance at once, released by one barrier; each
    caller opens its own connection, so the copies land on both workers of an instance."""
    jobs = [(b, body) for body in bodies for b in bases for _ in range(copies)]
    barrier = threading.Barrier(len(jobs))

    def send(job: tuple[str, dict[str, object]]) -> tuple[int, dict[str, object]]:
        base, body = job
        with httpx.Client(base_url=base, headers=TOKEN, timeout=60) as c:
            barrier.wait()
            r = c.post(path, json=body)
            return r.status_code, r.json()

    with ThreadPoolExecutor(len(jobs)) as pool:
        return list(pool.map(send, jobs))


def _race(bases: list[str], path: str, bodies: list[dict[str, object]], copies: int) -> list[int]:
    return [status for status, _ in _race_answers(bases, path, bodies, copies)]


def _changed(answers: list[tuple[int, dict[str, object]]]) -> dict[str, int]:
    """How many finish answers said they changed each cycle."""
    out: dict[str, int] = {}
    for status, body in answers:
        assert status == 200, body
        cycle = body["cycle"]
        assert isinstance(cycle, dict)
        out[str(cycle["cycle_id"])] = out.get(str(cycle["cycle_id"]), 0) + bool(body["changed"])
    return out


def _argv_of_group(pgid: int) -> list[str]:
    """The command lines of every process in a process group (the server and its workers)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.getpgid(int(proc.name)) == pgid:
                out.append((proc / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ProcessLookupError):
            continue
    return out


def _store_families(text: str) -> dict[str, str]:
    """The samples `/metrics` computes from the store (not this process's own request metrics)."""
    keep = (
        "octel_cycles_",
        "octel_cycle_duration_seconds",
        "octel_sessions_",
        "octel_session_",
        "octel_daemon",
    )
    return {
        line.rsplit(" ", 1)[0]: line.rsplit(" ", 1)[1]
        for line in text.splitlines()
        if line.startswith(keep) and not re.search(r"_created\b", line)
    }


def test_two_instances_lose_nothing_and_count_once(tmp_path: Path, pg_url: str) -> None:
    workers = ["--workers", "2"]
    server_a = OctelProcess(tmp_path / "a", pg_url, serve_args=workers)
    try:
        server_a.start()
        with live_octel(tmp_path / "b", pg_url, serve_args=workers) as b:
            _lose_nothing([server_a.base, b])
            assert server_a.proc is not None
            argv = _argv_of_group(server_a.proc.pid)
            assert len(argv) >= 3, argv  # the server and its two workers
            # the settings reach the workers through their environment, not their command line
            assert not any(TOKEN["Authorization"].split()[1] in a or "postgresql" in a for a in argv), argv
    finally:
        server_a.stop()
    _count_once(pg_url)


def _lose_nothing(bases: list[str]) -> None:
    with ThreadPoolExecutor(WRITERS) as pool:
        created = sum(pool.map(_writer, [bases] * WRITERS, range(WRITERS)))
    assert created == WRITERS * PER_WRITER

    # The same cycles begun and finished by many callers on both instances at once.
    racing = [{"cycle_id": f"race-{k}", "driver": "racer"} for k in range(RACING)]
    begun = _race(bases, "/api/v1/cycles/begin", racing, copies=3)
    assert sorted(set(begun)) == [200, 201] and begun.count(201) == len(racing)
    finished = [{**c, "terminal_state": "done", "worker_wallclock_seconds": 5.0} for c in racing]
    assert _changed(_race_answers(bases, "/api/v1/cycles/finish", finished, copies=3)) == {
        c["cycle_id"]: 1 for c in racing
    }
    # Finishes of cycles never begun race to insert them: one row each, one finish counted.
    unbegun = [
        {
            "cycle_id": f"late-{k}",
            "driver": "racer",
            "terminal_state": "done",
            "worker_wallclock_seconds": 5.0,
        }
        for k in range(UNBEGUN)
    ]
    assert _changed(_race_answers(bases, "/api/v1/cycles/finish", unbegun, copies=3)) == {
        c["cycle_id"]: 1 for c in unbegun
    }

    # Both instances answer the same, from the store.
    for path in ("/api/cycles/summary?since=24h", "/api/cycles?limit=50&driver=racer"):
        ja, jb = (httpx.get(x + path).json() for x in bases)
        ja.pop("since", None), jb.pop("since", None)  # each instance's own clock
        assert ja == jb, path
    # Every worker of both instances computes the same store-derived samples.
    scrapes = [_store_families(httpx.get(x + "/metrics").text) for x in bases for _ in range(4)]
    assert scrapes[0] and all(m == scrapes[0] for m in scrapes)


def _count_once(pg_url: str) -> None:
    engine = make_engine(pg_url)
    with session_scope(engine, write=False) as db:
        total = WRITERS * PER_WRITER + RACING + UNBEGUN
        assert db.exec(select(func.count()).select_from(Cycle)).one() == total
        done = db.exec(select(func.sum(Aggregate.value)).where(Aggregate.metric == "cycles_total")).one()
        racer = [
            v
            for m, lbl, v in read_all(db)
            if m == "cycle_duration_seconds_count" and lbl["driver"] == "racer"
        ]
    engine.dispose()
    assert done == WRITERS * len(range(0, PER_WRITER, 3)) + RACING + UNBEGUN
    assert racer == [RACING + UNBEGUN]


def _record(tokens: int) -> SessionRecord:
    return session_record(
        "ses_shared",
        tokens_input=tokens,
        tokens_output=1,
        cost_usd=0.01,
        subtree_tokens=tokens + 1,
        subtree_cost_usd=0.01,
        schema_version=2,
        content_hash="h",
    )


def test_concurrent_archives_of_one_session_count_its_usage_once(pg_url: str) -> None:
    """Two instances index the same session at the same moment: one row, tokens counted once."""
    engines = [make_engine(pg_url), make_engine(pg_url)]
    upgrade(engines[0])
    red = Redactor(b"k" * 32, [])
    barrier = threading.Barrier(8)

    def archive(i: int) -> None:
        barrier.wait()
        with session_scope(engines[i % 2]) as db:
            index_records(db, [_record(100)], redactor=red)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(archive, range(8)))
    with session_scope(engines[0], write=False) as db:
        rows = db.exec(select(func.count()).select_from(SessionIndex)).one()
        counters = {(m, lbl.get("kind")): v for m, lbl, v in read_all(db)}
    for e in engines:
        e.dispose()
    assert rows == 1
    assert counters[("sessions_archived_total", None)] == 1
    assert counters[("session_tokens_total", "input")] == 100
