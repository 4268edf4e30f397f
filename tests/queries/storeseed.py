"""Seed the store directly (index rows, findings, cycles, runs) for query and CLI tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine

from telemetry.services.spend.spend_repair import rebuild_spend
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Cycle, Finding, SessionIndex

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)

__all__ = ["T0", "add", "cycle", "finding", "run", "seed_fleet", "session"]


def session(session_id: str, **kw: Any) -> SessionIndex:
    d: dict[str, Any] = {
        "session_id": session_id,
        "root_session_id": session_id,
        "archived_at": T0,
        "created_at": T0,
        "archive_path": f"{session_id}.json",
        "content_hash": "h-" + session_id,
    }
    d.update(kw)
    return SessionIndex(**d)


def finding(session_id: str, detector: str, verdict: str, **kw: Any) -> Finding:
    d: dict[str, Any] = {
        "session_id": session_id,
        "detector": detector,
        "verdict": verdict,
        "score": 0.9 if verdict == "stuck" else 0.5,
        "detected_at": T0,
        "evidence": {"summary": f"{detector} evidence"},
    }
    d.update(kw)
    return Finding(**d)


def cycle(cycle_id: str, driver: str, **kw: Any) -> Cycle:
    d: dict[str, Any] = {
        "cycle_id": cycle_id,
        "driver": driver,
        "started_at": T0,
        "updated_at": T0,
    }
    d.update(kw)
    return Cycle(**d)


def run(run_key: str, **kw: Any) -> AgentRun:
    d: dict[str, Any] = {"run_key": run_key, "created_at": T0}
    d.update(kw)
    return AgentRun(**d)


def add(engine: Engine, *rows: Any) -> None:
    """Add rows as written by hand, then bring the drivers and the daily spend summary in step
    with them, as the services would have."""
    with session_scope(engine) as db:
        for r in rows:
            db.add(r)
        db.flush()
        rebuild_spend(db)


def seed_fleet(engine: Engine) -> None:
    """A small fleet: one review tree (root + 2 children + 1 grandchild), two more roots,
    cycles for two drivers and three Claude runs (success, max turns, execution error)."""
    h = timedelta(hours=1)
    add(
        engine,
        session(
            "ses_root",
            agent="build",
            model="anthropic/claude-sonnet-4",
            title="Fix flaky test in parser",
            label="review",
            cycle_id="cyc-1",
            archived_at=T0 + 3 * h,
            created_at=T0,
            duration_s=620.0,
            turn_count=12,
            tokens_input=1000,
            tokens_output=500,
            tokens_reasoning=100,
            tokens_cache_read=3000,
            tokens_cache_write=200,
            cost_usd=0.50,
            verdict="healthy",
        ),
        session(
            "ses_child_a",
            root_session_id="ses_root",
            parent_session_id="ses_root",
            depth=1,
            agent="general",
            model="anthropic/claude-sonnet-4",
            title="Search for callers (@general subagent)",
            label="review",
            archived_at=T0 + 2 * h,
            created_at=T0 + timedelta(minutes=1),
            tokens_input=400,
            tokens_output=100,
            cost_usd=0.20,
            verdict="stuck",
            worst_detector="doom_loop",
            finding_count=1,
        ),
        session(
            "ses_child_b",
            root_session_id="ses_root",
            parent_session_id="ses_root",
            depth=1,
            agent="explore",
            model="openai/gpt-5",
            title="Read the docs (@explore subagent)",
            archived_at=T0 + 2 * h,
            created_at=T0 + timedelta(minutes=2),
            tokens_input=50,
            tokens_output=10,
            cost_usd=0.05,
        ),
        session(
            "ses_grand",
            root_session_id="ses_root",
            parent_session_id="ses_child_a",
            depth=2,
            agent="general",
            model="anthropic/claude-sonnet-4",
            title="Nested look (@general subagent)",
            archived_at=T0 + 1 * h,
            created_at=T0 + timedelta(minutes=3),
            tokens_input=10,
            tokens_output=5,
            cost_usd=0.01,
        ),
        session(
            "ses_other",
            agent="build",
            model="openai/gpt-5",
            title="Implement retry budget",
            label="implementer",
            archived_at=T0 + 4 * h,
            created_at=T0 + 4 * h,
            tokens_input=300,
            tokens_output=30,
            tokens_cache_read=100,
            cost_usd=0.30,
            verdict="suspect",
            worst_detector="retry_cascade",
            finding_count=1,
        ),
        session(
            "ses_old",
            agent="plan",
            model="openai/gpt-5",
            title="Old planning session",
            archived_at=T0 - 48 * h,
            created_at=T0 - 48 * h,
            tokens_input=1,
            cost_usd=0.001,
        ),
        finding("ses_child_a", "doom_loop", "stuck", start_index=4),
        finding("ses_other", "retry_cascade", "suspect", start_index=2),
        cycle(
            "cyc-1",
            "review",
            ended_at=T0 + timedelta(minutes=11),
            terminal_state="done",
            worker_outcome="merged",
            session_id="ses_root",
            worker_wallclock_seconds=640.0,
        ),
        cycle(
            "cyc-2",
            "implementer",
            started_at=T0 + h,
            ended_at=T0 + 2 * h,
            terminal_state="failed",
            worker_outcome="timeout",
            error_kind="worker_timeout",
            session_id="ses_other",
        ),
        cycle("cyc-3", "implementer", started_at=T0 + 5 * h),
        run(
            "run-ok",
            task="triage #12",
            agent="triage",
            model="claude-sonnet-4-5",
            subtype="success",
            exit_code=0,
            num_turns=4,
            duration_ms=12000,
            cost_usd=0.12,
            input_tokens=20,
            output_tokens=300,
            cache_read_tokens=5000,
            cache_creation_tokens=800,
            created_at=T0 + h,
        ),
        run(
            "run-turns",
            task="triage #13",
            agent="triage",
            model="claude-sonnet-4-5",
            subtype="error_max_turns",
            is_error=True,
            exit_code=1,
            num_turns=30,
            cost_usd=0.40,
            input_tokens=40,
            output_tokens=900,
            cache_read_tokens=20000,
            created_at=T0 + 2 * h,
        ),
        run(
            "run-exec",
            task="fix #14",
            agent="fixer",
            model="claude-opus-4-1",
            subtype="error_during_execution",
            is_error=True,
            exit_code=1,
            num_turns=2,
            cost_usd=0.05,
            input_tokens=10,
            output_tokens=20,
            created_at=T0 + 2 * h,
        ),
    )
