"""8 writers by 500 cycles at once through a live `octel serve`, which is killed with SIGKILL
twice mid-run and started again: every acknowledged write is stored, nothing twice."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from liveserver import OctelProcess
from sqlmodel import col, func, select

from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import Aggregate, Cycle

WRITERS, PER_WRITER = 8, 500
KILL_AT = (1000, 2600)  # acknowledged writes after which the server is killed
TOKEN = {"Authorization": "Bearer test-token-0123456789"}


@dataclass
class Ledger:
    """What the server acknowledged, shared by the writers and the killer."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    begun: set[str] = field(default_factory=set)
    finished: set[str] = field(default_factory=set)
    created: int = 0
    acks: int = 0
    server_errors: list[str] = field(default_factory=list)
    retried: int = 0

    def ack(self, kind: str, cid: str, status: int) -> None:
        with self.lock:
            self.acks += 1
            if kind == "begin":
                self.begun.add(cid)
                self.created += status == 201
            else:
                self.finished.add(cid)


def _send(c: httpx.Client, path: str, body: dict[str, Any], ledger: Ledger) -> int:
    """POST until the server answers; a call cut by the kill is retried, as a dispatcher does
    (every write is idempotent)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            r = c.post(path, json=body)
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            with ledger.lock:
                ledger.retried += 1
            time.sleep(0.05)
            continue
        if r.status_code >= 500:
            ledger.server_errors.append(f"{path} {r.status_code} {r.text[:200]}")
        return r.status_code


def _writer(base: str, w: int, ledger: Ledger) -> None:
    with httpx.Client(base_url=base, headers=TOKEN, timeout=60) as c:
        for i in range(PER_WRITER):
            cid = f"w{w}-c{i}"
            status = _send(c, "/api/v1/cycles/begin", {"cycle_id": cid, "driver": f"d{w % 3}"}, ledger)
            if status in (200, 201):
                ledger.ack("begin", cid, status)
            if i % 5 == 0:  # some finish, and some finishes are retried
                body = {"cycle_id": cid, "driver": f"d{w % 3}", "terminal_state": "done"}
                for _ in range(2 if i % 10 == 0 else 1):
                    if _send(c, "/api/v1/cycles/finish", body, ledger) == 200:
                        ledger.ack("finish", cid, 200)


def _killer(server: OctelProcess, ledger: Ledger, done: threading.Event) -> int:
    kills = 0
    for at in KILL_AT:
        while ledger.acks < at and not done.is_set():
            time.sleep(0.01)
        if done.is_set():
            break
        server.kill9()
        kills += 1
        server.start()
    return kills


def test_concurrent_writers_lose_and_double_nothing_across_kills(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "data").mkdir()
    server = OctelProcess(tmp_path / "data", store_url)
    ledger, done = Ledger(), threading.Event()
    server.start()
    try:
        with ThreadPoolExecutor(WRITERS + 1) as pool:
            killer = pool.submit(_killer, server, ledger, done)
            writers = [pool.submit(_writer, server.base, w, ledger) for w in range(WRITERS)]
            for f in writers:
                f.result()
            done.set()
            kills = killer.result()
    finally:
        server.stop()
    assert kills == len(KILL_AT)  # the kills came mid-run, not after it
    assert ledger.server_errors == []
    assert ledger.retried > 0  # some calls really were cut by a kill
    assert len(ledger.begun) == WRITERS * PER_WRITER  # every call was acknowledged in the end
    engine = make_engine(store_url)
    with session_scope(engine, write=False) as db:
        stored = set(db.exec(select(Cycle.cycle_id)).all())
        ended = set(db.exec(select(Cycle.cycle_id).where(col(Cycle.ended_at).is_not(None))).all())
        assert db.exec(select(func.count()).select_from(Cycle)).one() == WRITERS * PER_WRITER
        finished = db.exec(select(func.sum(Aggregate.value)).where(Aggregate.metric == "cycles_total")).one()
    engine.dispose()
    assert ledger.begun <= stored and ledger.finished <= ended
    assert finished == WRITERS * PER_WRITER // 5  # a finish retried across a kill counts once
