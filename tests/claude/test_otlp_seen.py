"""What the OTLP receiver remembers of the observations it counted: a digest row each in
`otlp_seen`, so a retried export counts nothing twice while a long session's run stays small."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, text
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.claude.otlp import Observation
from archiver.redact import Redactor
from telemetry.services.claude.otlp import apply, digest
from telemetry.services.index.prune import prune
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import AgentRun, OtlpSeen

REDACTOR = Redactor(b"k" * 32)
NOW = datetime(2026, 11, 20, tzinfo=UTC)


def _request(sid: str, n: int) -> Observation:
    return Observation(
        sid, f"api_request|req_{n:06d}", "api_request", "claude-opus-5-5", 0.01, {"input": 100.0}
    )


def _fold(engine: Engine, found: list[Observation]) -> int:
    with session_scope(engine) as db:
        return apply(db, found, NOW, REDACTOR)


def _run(engine: Engine, sid: str) -> AgentRun:
    with session_scope(engine, write=False) as db:
        row = db.exec(select(AgentRun).where(AgentRun.run_key == f"otel:{sid}")).one()
        db.expunge(row)
        return row


def _seen(engine: Engine) -> int:
    with session_scope(engine, write=False) as db:
        return db.exec(select(func.count()).select_from(OtlpSeen)).one()


@pytest.fixture
def migrated(engine: Engine) -> Iterator[Engine]:
    upgrade(engine)
    yield engine


def test_a_long_session_keeps_a_run_of_the_same_size_and_counts_each_request_once(migrated: Engine) -> None:
    assert _fold(migrated, [_request("s", n) for n in range(50)]) == 50
    small = len(json.dumps(_run(migrated, "s").raw))
    for start in range(50, 1_050, 250):
        batch = [_request("s", n) for n in range(start, start + 250)]
        assert _fold(migrated, batch + batch[:10]) == 250  # a batch repeating itself counts once
    assert _fold(migrated, [_request("s", n) for n in range(0, 1_050, 7)]) == 0  # retried exports
    run = _run(migrated, "s")
    assert run.num_turns == 1_050 and run.input_tokens == 105_000
    assert run.cost_usd == pytest.approx(10.5)
    assert len(json.dumps(run.raw)) < small + 20  # the run's JSON holds tallies, not every key
    assert _seen(migrated) == 1_050


def test_the_same_key_in_two_sessions_counts_in_each(migrated: Engine) -> None:
    assert _fold(migrated, [_request("a", 1), _request("b", 1)]) == 2
    assert _run(migrated, "a").num_turns == _run(migrated, "b").num_turns == 1


def test_pruning_a_run_removes_what_it_had_seen(migrated: Engine, tmp_path: Path) -> None:
    _fold(migrated, [_request("old", n) for n in range(5)])
    later = NOW + timedelta(days=40)
    with session_scope(migrated) as db:
        apply(db, [_request("new", n) for n in range(3)], later, REDACTOR)
    report = prune(migrated, tmp_path / "archives", NOW + timedelta(days=1))
    assert report["agent_runs"] == 1 and _seen(migrated) == 3
    assert _fold(migrated, [_request("new", n) for n in range(4)]) == 1


def test_the_upgrade_moves_each_runs_kept_keys_into_the_table(store_url: str) -> None:
    engine = make_engine(store_url)
    try:
        upgrade(engine, "0016")
        raw = {"seen": ["api_request|req_000001", "api_request|req_000002"], "events": {"api_request": 2}}
        with engine.begin() as conn:
            for key, doc in (("otel:s", raw), ("run-1", {"seen": ["x"]})):
                conn.execute(
                    text(
                        "INSERT INTO agent_run (run_key, agent, is_error, cost_usd, input_tokens, "
                        "output_tokens, cache_read_tokens, cache_creation_tokens, raw, created_at) "
                        "VALUES (:k, 'claude-code', false, 0.02, 200, 0, 0, 0, :raw, :at)"
                    ),
                    {"k": key, "raw": json.dumps(doc), "at": "2026-11-20 00:00:00.000000"},
                )
        upgrade(engine)
        with session_scope(engine, write=False) as db:
            moved = set(db.exec(select(OtlpSeen.run_key, OtlpSeen.digest)).all())
        assert moved == {("otel:s", digest(k)) for k in raw["seen"]}
        assert _run(engine, "s").raw == {"events": {"api_request": 2}}
        with session_scope(engine, write=False) as db:
            other = db.exec(select(AgentRun).where(AgentRun.run_key == "run-1")).one()
            assert other.raw == {"seen": ["x"]}  # not a telemetry run: left as it was
        assert _fold(engine, [_request("s", 1), _request("s", 2), _request("s", 3)]) == 1
    finally:
        engine.dispose()
