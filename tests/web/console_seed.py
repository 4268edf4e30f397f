"""Realistic stores for the console tests: the captured OpenCode runs archived and indexed by
the real archiver (served to it from the captured server data through an httpx MockTransport),
cycles and daemons written through the ingestion library, a Claude CLI run.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from archived_template import archived_copy
from live_seed import store_waiting_tree
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.archiving import ArchiveOutcome, archive_session_tree_async
from telemetry.services.index.search_catchup import index_now
from telemetry.services.ingest import ingest
from telemetry.services.redaction import redactor_for
from telemetry.services.spend.spend_repair import rebuild_spend
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import Finding, SessionIndex
from telemetry.timeutil import utcnow

RED = Redactor(b"k" * 32)  # every stored input passes a redactor
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"
# Which driver ran which captured scenario (a session's driver is its cycle's).
DRIVERS = {"subagent_tree": "implement", "subtask_part": "implement", "tool_errors": "implement"}
# A snapshot taken while the run was still going: its last turn is in flight.
MIDRUN = {"aborted"}


@dataclass
class Seeded:
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # session_id -> facts
    scenarios: dict[str, str] = field(default_factory=dict)  # scenario -> root session id
    files: list[str] = field(default_factory=list)


class CapturedServer:
    """The classic OpenCode routes the archiver reads, answered from one captured run."""

    def __init__(self, run: dict[str, Any], version: str, fail: frozenset[str] = frozenset()) -> None:
        self.sessions = {s["id"]: s for s in run["sessions"] if isinstance(s, dict) and "id" in s}
        self.messages = run["messages"]
        self.version = version
        self.fail = fail  # paths that answer 500, every time

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def handle(self, request: httpx.Request) -> httpx.Response:
        if request.url.path in self.fail:
            return httpx.Response(500, json={"name": "UnknownError", "data": {"message": "injected"}})
        parts = request.url.path.strip("/").split("/")
        if parts == ["global", "health"]:
            return httpx.Response(200, json={"healthy": True, "version": self.version})
        if parts[0] != "session" or len(parts) < 2:
            return httpx.Response(404, text="Not Found")
        sid = parts[1]
        if sid not in self.sessions:
            return httpx.Response(404, json={"name": "NotFoundError", "data": {"message": sid}})
        what = parts[2] if len(parts) > 2 else ""
        if what == "":
            return httpx.Response(200, json=self.sessions[sid])
        if what == "children":
            kids = [s for s in self.sessions.values() if s.get("parentID") == sid]
            return httpx.Response(200, json=kids)
        if what == "message":
            return httpx.Response(200, json=self.messages.get(sid, []))
        if what in ("diff", "todo"):
            return httpx.Response(200, json=[])
        return httpx.Response(404, text="Not Found")


def _status(fx: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for sample in fx.get("status_samples") or []:
        for sid, st in sample["status"].items():
            out.setdefault(sid, []).append({"t": sample["t"], **st})
    return out


def _permissions(fx: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in fx.get("events") or []:
        e = ev["event"]
        if str(e.get("type", "")).startswith("permission."):
            out.setdefault(e["properties"].get("sessionID", ""), []).append(ev)
    return out


def archive_fixtures(engine: Engine, settings: Settings, now: datetime) -> Seeded:
    """Archive and index every captured run, five minutes apart, the last one five minutes ago.

    The archiver stamps everything "now"; the index times are then spread out so windows and
    ordering have something to show (the archive files keep what the archiver wrote). On
    SQLite the archiving runs once a process and later stores are copies of it
    (`archived_copy`); the times, cycles and everything after are written for each store.
    """
    out = Seeded()
    runs = _runs()

    def archive() -> None:
        for run in runs:
            outcome = asyncio.run(_archive(run.server, run.fx, settings, engine, run.scenario, run.cycle_id))
            assert outcome.ok, (run.scenario, outcome.to_dict())

    archived_copy(settings, engine, archive)
    # the copy is of a store seeded under some test's settings: with the catch-up at 0 this
    # store's archives are searchable at once, whatever the first store's settings left queued
    index_now(settings, engine, redactor_for(settings))
    for run in runs:
        scenario, root = run.scenario, run.fx["root_id"]
        archived_at = now - timedelta(minutes=5 * run.back)
        with session_scope(engine) as db:
            rows = db.exec(select(SessionIndex).where(SessionIndex.root_session_id == root)).all()
            for r in rows:
                took = timedelta(seconds=r.duration_s or 0)
                db.exec(
                    update(SessionIndex)
                    .where(SessionIndex.id == r.id)  # type: ignore[arg-type]
                    .values(archived_at=archived_at, created_at=archived_at - took - timedelta(minutes=1))
                )
                db.exec(
                    update(Finding)
                    .where(Finding.session_id == r.session_id)  # type: ignore[arg-type]
                    .values(detected_at=archived_at)
                )
                findings = db.exec(select(Finding).where(Finding.session_id == r.session_id)).all()
                out.sessions[r.session_id] = {
                    "scenario": scenario,
                    "title": r.title,
                    "agent": r.agent,
                    "verdict": r.verdict,
                    "depth": r.depth,
                    "file": r.archive_path,
                    "in_flight": r.in_flight,
                    "findings": [f.detector for f in findings if f.verdict != "healthy"],
                }
                out.files.append(r.archive_path)
            stuck = any(r.verdict == "stuck" for r in rows if r.depth == 0)
            _cycle(db, scenario, run.cycle_id, root, archived_at, ok=not stuck, now=now)
        out.scenarios[scenario] = root
    return out


@dataclass(frozen=True)
class _Run:
    fx: dict[str, Any]
    scenario: str
    server: CapturedServer
    back: int  # archived this many five-minute steps ago

    @property
    def cycle_id(self) -> str:
        return f"cyc-{self.scenario}"


_RUNS: list[_Run] = []


def _runs() -> list[_Run]:
    """The captured server runs to archive, read once a process."""
    if not _RUNS:
        paths = sorted(p for p in FIXTURES.glob("*.json") if p.name != "openapi.json")
        for n, path in enumerate(paths):
            fx = json.loads(path.read_text())
            if "scenario" not in fx:  # other captured shapes (an `opencode export`) are no server runs
                continue
            scenario = fx["scenario"]
            run = fx["midrun"] if scenario in MIDRUN and fx.get("midrun") else fx
            server = CapturedServer(run, fx["opencode_version"])
            if fx["root_id"] not in server.sessions:  # the run deleted its sessions: nothing to archive
                continue
            _RUNS.append(_Run(fx, scenario, server, len(paths) - n))
    return _RUNS


async def _archive(
    server: CapturedServer, fx: dict[str, Any], settings: Settings, engine: Engine, label: str, cycle_id: str
) -> ArchiveOutcome:
    async with httpx.AsyncClient(transport=server.transport()) as http:
        return await archive_session_tree_async(
            fx["root_id"],
            settings=settings,
            engine=engine,
            server_url="http://opencode.test",
            label=label,
            cycle_id=cycle_id,
            http=http,
            status_history=_status(fx),
            permission_events=_permissions(fx),
        )


def _cycle(db: Any, scenario: str, cycle_id: str, root: str, at: datetime, ok: bool, now: datetime) -> None:
    driver = DRIVERS.get(scenario, "review")
    begin = ingest.CycleBegin(
        cycle_id=cycle_id,
        driver=driver,
        started_at=at - timedelta(minutes=3),
        host="fleet-1",
        candidates_count=1,
        claims_count=1,
        session_id=root,
    )
    ingest.begin_cycle(db, begin, now, redactor=RED)
    finish = ingest.CycleFinish(
        cycle_id=cycle_id,
        driver=driver,
        terminal_state="done" if ok else "failed",
        worker_outcome="merged" if ok else "stuck",
        ended_at=at - timedelta(seconds=30),
        processed_count=1,
        escalated_count=0 if ok else 1,
        error_kind=None if ok else "agent_stuck",
    )
    ingest.finish_cycle(db, finish, now, redactor=RED)


@dataclass
class Fleet:
    long_worker_driver: str = "implement"
    ok_driver: str = "review"
    down_driver: str = "triage"
    in_flight_cycle: str = "cyc-live-impl-42"
    dead_pid: int = 0


def seed_fleet(engine: Engine, now: datetime, live_pid: int, dead_pid: int) -> Fleet:
    """Three daemons: a long-running worker (live pid, stale beat, cycle in flight), a healthy
    one, and one whose process is gone; plus an in-flight cycle and a Claude CLI run."""
    host = socket.gethostname()
    fleet = Fleet(dead_pid=dead_pid)
    with session_scope(engine) as db:
        ingest.begin_cycle(
            db,
            ingest.CycleBegin(
                cycle_id=fleet.in_flight_cycle,
                driver=fleet.long_worker_driver,
                host=host,
                pid=live_pid,
                started_at=now - timedelta(minutes=42),
                candidates_count=4,
                claims_count=1,
            ),
            now,
            redactor=RED,
        )
        for driver, pid, age, flight in (
            (fleet.long_worker_driver, live_pid, timedelta(minutes=20), fleet.in_flight_cycle),
            (fleet.ok_driver, live_pid, timedelta(seconds=0), None),
            (fleet.down_driver, dead_pid, timedelta(minutes=3), None),
        ):
            ingest.heartbeat(
                db,
                ingest.HeartbeatIn(
                    driver=driver, host=host, pid=pid, in_flight_cycle_id=flight, at=now - age
                ),
                now,
                redactor=RED,
            )
        result = {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "duration_ms": 41000,
            "duration_api_ms": 39000,
            "num_turns": 7,
            "result": "done",
            "session_id": "claude-run-1",
            "total_cost_usd": 0.4213,
            "usage": {
                "input_tokens": 1200,
                "output_tokens": 3400,
                "cache_read_input_tokens": 52000,
                "cache_creation_input_tokens": 8000,
            },
            "modelUsage": {"claude-sonnet-4-5": {"costUSD": 0.4213}},
        }
        ingest.add_agent_run(
            db, ingest.AgentRunIn(task="fix-flaky-test", agent="claude", result=result), now, redactor=RED
        )
    return fleet


@dataclass
class Store:
    settings: Settings
    seeded: Seeded
    fleet: Fleet
    now: datetime


def dead_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def build_store(settings: Settings, live_pid: int) -> Store:
    engine = make_engine(settings.db_url)
    try:
        upgrade(engine)
        now = utcnow()
        seeded = archive_fixtures(engine, settings, now)
        fleet = seed_fleet(engine, now, live_pid, dead_pid())
        # the captured subagent tree is also running now: its child waits on an ask
        store_waiting_tree(engine)
        with session_scope(engine) as db:  # the times moved above by hand: the spend follows them
            rebuild_spend(db)
    finally:
        engine.dispose()
    return Store(settings, seeded, fleet, now)


HOSTILE_TITLE = '<img src=x onerror="window.__pwned=1">Hostile <b>title</b>'
HOSTILE_TEXT = '<script>window.__pwned=2</script><img src=x onerror="window.__pwned=3">'


def archive_hostile(settings: Settings) -> str:
    """The captured healthy run under a new id, with markup in its title and its messages:
    what a console must show as text and never run."""
    fx = json.loads((FIXTURES / "healthy.json").read_text())
    sid: str = "ses_hostile" + fx["root_id"][11:]
    raw = json.dumps(fx).replace(fx["root_id"], sid)
    fx = json.loads(raw)
    fx["sessions"][0]["title"] = HOSTILE_TITLE
    for m in fx["messages"][sid]:
        for p in m["parts"]:
            if p.get("type") == "text":
                p["text"] = HOSTILE_TEXT
    engine = make_engine(settings.db_url)
    try:
        outcome = _run(
            _archive(CapturedServer(fx, fx["opencode_version"]), fx, settings, engine, "hostile", "cyc-h")
        )
    finally:
        engine.dispose()
    assert outcome.ok, outcome.to_dict()
    return sid


def archive_with_failures(settings: Settings, scenario: str, fail: frozenset[str]) -> ArchiveOutcome:
    """Archive a captured run again from a server that keeps failing on some paths."""
    fx = json.loads((FIXTURES / f"{scenario}.json").read_text())
    engine = make_engine(settings.db_url)
    try:
        server = CapturedServer(fx, fx["opencode_version"], fail)
        return _run(_archive(server, fx, settings, engine, scenario, f"cyc-{scenario}"))
    finally:
        engine.dispose()


def _run(coro: Coroutine[Any, Any, ArchiveOutcome]) -> ArchiveOutcome:
    """Run in a thread of its own: the caller may be inside an event loop (Playwright's)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
