"""Realistic stores for the console tests: the captured OpenCode runs archived and indexed,
cycles and daemons written through the ingestion library, a Claude CLI run or two.

Archive documents are built from the captured server data with the archiver's own pieces
(per-turn metrics, totals, rollups, redaction) and the real detectors, so the console shows
what it would show for those runs.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.engine import Engine

import detectors
from archiver import convert
from archiver.metrics import per_turn, rollup, totals
from archiver.redact import Redactor
from telemetry import ingest
from telemetry.db import session_scope
from telemetry.models import Finding, SessionIndex

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "opencode"
KEY = bytes(range(32))
# Which driver ran which captured scenario (a session's driver is its cycle's).
DRIVERS = {"subagent_tree": "implement", "subtask_part": "implement", "tool_errors": "implement"}
# A snapshot taken while the run was still going: its last turn is in flight.
MIDRUN = {"aborted"}


@dataclass
class Seeded:
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)  # session_id -> facts
    scenarios: dict[str, str] = field(default_factory=dict)  # scenario -> root session id
    files: list[str] = field(default_factory=list)


def archive_name(archived_at: datetime, depth: int, label: str, agent: str | None, sid: str) -> str:
    stamp = archived_at.strftime("%Y-%m-%dT%H%M%S.%fZ")
    return f"{stamp}__sub{depth}__{label}__{agent or 'noagent'}__{sid}.json"


def _agent(rec: dict[str, Any]) -> str | None:
    title = rec.get("title") or ""
    if "(@" in title and title.endswith(" subagent)"):
        return str(title.rsplit("(@", 1)[1].split(" ", 1)[0])
    return rec.get("agent")


def _model(rec: dict[str, Any]) -> str | None:
    m = rec.get("model")
    if isinstance(m, dict) and m.get("id"):
        return f"{m.get('providerID', '')}/{m['id']}"
    return None


def _findings(doc: dict[str, Any], sid: str, messages: list[Any]) -> list[dict[str, Any]]:
    stream = convert.from_opencode(messages, events=doc.get("events") or [], session_id=sid)
    status = convert.status_from_opencode(doc.get("status_samples") or [], session_id=sid)
    return [f.to_dict() for f in detectors.score(stream, status=status)]


def archive_fixtures(engine: Engine, archive_dir: Path, now: datetime) -> Seeded:
    """Archive and index every captured run; newest scenario last in file order."""
    archive_dir.mkdir(parents=True, exist_ok=True)
    redactor = Redactor(KEY)
    out = Seeded()
    paths = sorted(p for p in FIXTURES.glob("*.json") if p.name != "openapi.json")
    for n, path in enumerate(paths):
        fx = json.loads(path.read_text())
        scenario = fx["scenario"]
        source = fx["midrun"] if scenario in MIDRUN and fx.get("midrun") else fx
        records = {s["id"]: s for s in source["sessions"] if isinstance(s, dict) and "id" in s}
        if fx["root_id"] not in records:  # the run deleted its sessions: nothing to archive
            continue
        parents = {sid: rec.get("parentID") for sid, rec in records.items()}
        msgs = {sid: source["messages"].get(sid, []) for sid in records}
        turns = {sid: per_turn(m) for sid, m in msgs.items()}
        own = {sid: totals(msgs[sid], turns[sid]) for sid in records}
        sub = rollup(own, parents)
        archived_at = now - timedelta(minutes=5 * (len(paths) - n))
        cycle_id = f"cyc-{scenario}"
        driver = DRIVERS.get(scenario, "review")
        with session_scope(engine) as db:
            begin = ingest.CycleBegin(
                cycle_id=cycle_id,
                driver=driver,
                started_at=archived_at - timedelta(minutes=3),
                host="fleet-1",
                candidates_count=1,
                claims_count=1,
                session_id=fx["root_id"],
            )
            ingest.begin_cycle(db, begin, now)
            ok = not any(f["verdict"] == "stuck" for f in _findings(fx, fx["root_id"], msgs[fx["root_id"]]))
            finish = ingest.CycleFinish(
                cycle_id=cycle_id,
                driver=driver,
                terminal_state="done" if ok else "failed",
                worker_outcome="merged" if ok else "stuck",
                ended_at=archived_at - timedelta(seconds=30),
                processed_count=1,
                escalated_count=0 if ok else 1,
                error_kind=None if ok else "agent_stuck",
            )
            ingest.finish_cycle(db, finish, now)
        for sid, rec in records.items():
            depth, p = 0, parents[sid]
            while p in records and depth < 10:
                depth, p = depth + 1, parents[p]
            root = fx["root_id"]
            agent = _agent(rec)
            findings = _findings(fx, sid, msgs[sid])
            verdict = detectors.worst_verdict(
                detectors.Finding(f["detector"], f["verdict"], f["score"]) for f in findings
            )
            doc = {
                "schema_version": 2,
                "archived_at": archived_at.isoformat(),
                "label": scenario,
                "session_id": sid,
                "root_session_id": root,
                "parent_session_id": parents[sid],
                "depth": depth,
                "agent": agent,
                "title": rec.get("title"),
                "model": _model(rec),
                "session": rec,
                "messages": msgs[sid],
                "per_turn": turns[sid],
                "totals": own[sid],
                "subtree": sub[sid],
                "findings": findings,
                "verdict": verdict,
                "walk_errors": [],
            }
            result = redactor.redact_bytes(orjson.dumps(doc))
            doc = orjson.loads(result.data)
            doc["redaction"] = result.counts
            data = orjson.dumps(doc)
            name = archive_name(archived_at, depth, scenario, agent, sid)
            (archive_dir / name).write_bytes(data)
            out.files.append(name)
            t, o = own[sid]["tokens"], own[sid]
            ms = o["duration_ms"]
            with session_scope(engine) as db:
                db.add(
                    SessionIndex(
                        session_id=sid,
                        root_session_id=root,
                        parent_session_id=parents[sid],
                        depth=depth,
                        label=scenario,
                        cycle_id=cycle_id,
                        agent=agent,
                        model=_model(rec),
                        title=rec.get("title"),
                        directory=rec.get("directory"),
                        opencode_version=rec.get("version"),
                        created_at=archived_at - timedelta(milliseconds=ms or 0) - timedelta(minutes=1),
                        updated_at=archived_at - timedelta(minutes=1),
                        archived_at=archived_at,
                        duration_s=ms / 1000 if ms is not None else None,
                        turn_count=o["turns"],
                        message_count=o["messages"],
                        in_flight=o["in_flight_turns"] > 0,
                        tokens_input=t["input"],
                        tokens_output=t["output"],
                        tokens_reasoning=t["reasoning"],
                        tokens_cache_read=t["cache_read"],
                        tokens_cache_write=t["cache_write"],
                        cost_usd=o["cost"],
                        subtree_tokens=sub[sid]["tokens_total"],
                        subtree_cost_usd=sub[sid]["cost"],
                        subtree_session_count=sub[sid]["sessions"],
                        verdict=verdict,
                        worst_detector=next(
                            (
                                f["detector"]
                                for f in sorted(findings, key=lambda f: -f["score"])
                                if f["verdict"] == verdict
                            ),
                            None,
                        ),
                        finding_count=sum(1 for f in findings if f["verdict"] != "healthy"),
                        archive_path=name,
                        content_hash="sha256:" + str(hash(data)),
                    )
                )
                for f in findings:
                    db.add(
                        Finding(
                            session_id=sid,
                            detector=f["detector"],
                            verdict=f["verdict"],
                            score=f["score"],
                            start_index=f["start_index"],
                            evidence=f["evidence"],
                            detected_at=archived_at,
                        )
                    )
            out.sessions[sid] = {
                "scenario": scenario,
                "title": rec.get("title"),
                "agent": agent,
                "verdict": verdict,
                "depth": depth,
                "file": name,
                "findings": findings,
                "in_flight": o["in_flight_turns"] > 0,
            }
        out.scenarios[scenario] = fx["root_id"]
    return out


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
        ingest.add_agent_run(db, ingest.AgentRunIn(task="fix-flaky-test", agent="claude", result=result), now)
    return fleet
