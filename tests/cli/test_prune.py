"""`octel prune`: what goes, what the keep rule keeps, dry runs, and counters that never go down."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from octelrun import Octel
from prometheus_client.parser import text_string_to_metric_families
from sqlmodel import func, select
from storeseed import add, cycle, finding, run, session

from archiver.redact import Redactor
from telemetry.services.ingest.ingest import AgentRunIn, CycleFinish, add_agent_run, finish_cycle
from telemetry.settings import Settings
from telemetry.store import aggregates
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Aggregate, Cycle, Finding, SessionIndex
from telemetry.timeutil import utcnow
from web.app import create_app

RED = Redactor(b"k" * 32)  # every stored input passes a redactor
SUCCESS = (Path(__file__).parent.parent / "fixtures" / "claude" / "success.json").read_text()


@pytest.fixture
def aged(octel: Octel) -> Octel:
    """Old trees (healthy, stuck child, error, failed cycle), a fresh one, cycles and runs, files."""
    now = utcnow()
    old, new = now - timedelta(days=40), now - timedelta(hours=1)
    add(
        octel.engine,
        session("ses_h", archived_at=old, archive_path="ses_h.json"),
        session(
            "ses_h1",
            root_session_id="ses_h",
            parent_session_id="ses_h",
            archived_at=old,
            archive_path="ses_h1.json",
        ),
        session("ses_s", archived_at=old, archive_path="ses_s.json"),
        session(
            "ses_s1",
            root_session_id="ses_s",
            parent_session_id="ses_s",
            archived_at=old,
            archive_path="ses_s1.json",
            verdict="stuck",
        ),
        session("ses_e", archived_at=old, archive_path="ses_e.json", error_kind="ProviderAuthError"),
        session("ses_c", archived_at=old, archive_path="ses_c.json", cycle_id="cyc-failed"),
        session("ses_mixed", archived_at=old, archive_path="ses_mixed.json"),
        session(
            "ses_mixed1",
            root_session_id="ses_mixed",
            parent_session_id="ses_mixed",
            archived_at=new,
            archive_path="ses_mixed1.json",
        ),
        session("ses_new", archived_at=new, archive_path="ses_new.json"),
        session("ses_far", archived_at=old, archive_path="/etc/octel-not-ours.json"),
        finding("ses_h1", "doom_loop", "suspect"),
        finding("ses_s1", "doom_loop", "stuck"),
        cycle("cyc-ok", "review", started_at=old, ended_at=old, terminal_state="done"),
        cycle(
            "cyc-failed", "review", started_at=old, ended_at=old, terminal_state="failed", error_kind="crash"
        ),
        cycle("cyc-open", "review", started_at=old),
        run("run-old-ok", created_at=old),
        run("run-old-err", created_at=old, is_error=True, subtype="error_max_turns"),
        run("run-new", created_at=new),
    )
    folder = octel.data_dir / "archives"
    folder.mkdir(parents=True, exist_ok=True)
    for sid in ("ses_h", "ses_h1", "ses_s", "ses_s1", "ses_e", "ses_c", "ses_mixed", "ses_mixed1", "ses_new"):
        (folder / f"{sid}.json").write_text('{"schema_version": 2}')
    # Counters written the way live writers write them.
    with session_scope(octel.engine) as db:
        add_agent_run(db, AgentRunIn(agent="a", result=SUCCESS), old, redactor=RED)
        finish_cycle(
            db, CycleFinish(cycle_id="cyc-live", driver="impl", terminal_state="done"), old, redactor=RED
        )
        aggregates.bump(db, "sessions_archived_total", {"agent": "build"}, 10)
        aggregates.bump(db, "findings_total", {"detector": "doom_loop", "verdict": "stuck"}, 1)
    return octel


def _ids(octel: Octel, model: type, column: str) -> set[str]:
    with session_scope(octel.engine, write=False) as db:
        return set(db.exec(select(getattr(model, column))).all())


def _aggregates(octel: Octel) -> list[tuple[str, str, float]]:
    with session_scope(octel.engine, write=False) as db:
        return sorted((a.metric, a.labels, a.value) for a in db.exec(select(Aggregate)).all())


def _scrape(octel: Octel) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Counter and histogram samples from a real /metrics scrape of the same store."""
    settings = Settings(
        data_dir=octel.data_dir,
        database_url=octel.url,
        ingest_token="t" * 24,  # type: ignore[arg-type]
        _env_file=None,  # type: ignore[call-arg]
    )
    with TestClient(create_app(settings)) as client:
        text = client.get("/metrics").text
    out = {}
    for fam in text_string_to_metric_families(text):
        if fam.type in ("counter", "histogram") and not fam.name.startswith("octel_http"):
            for s in fam.samples:
                out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def _state(octel: Octel) -> tuple[object, ...]:
    files = sorted((octel.data_dir / "archives").iterdir())
    return _ids(octel, SessionIndex, "session_id"), _ids(octel, Cycle, "cycle_id"), _aggregates(octel), files


def test_dry_run_changes_nothing(aged: Octel, golden: Callable[[str, Any], None]) -> None:
    before = _state(aged)
    got = aged.json("prune", "--older-than", "30d", "--dry-run")
    golden(
        "prune_dry_run", {**got, "cutoff": "<now - 30d>", "sample_sessions": sorted(got["sample_sessions"])}
    )
    assert got["dry_run"] is True
    assert set(got["sample_sessions"]) == {"ses_h", "ses_h1", "ses_far"}
    assert (got["sessions"], got["trees"], got["findings"], got["archive_files"]) == (3, 2, 1, 2)
    assert got["archive_files_outside"] == 1
    assert (got["cycles"], got["agent_runs"]) == (2, 2)  # cyc-ok, cyc-live; run-old-ok and the live one
    assert got["kept"] == {"sessions": 4, "cycles": 1, "agent_runs": 1}
    assert _state(aged) == before
    r = aged("prune", "--older-than", "30d", "--dry-run")
    assert r.exit_code == 0 and "would remove" in r.stdout


def test_prune_keeps_failures_and_never_lowers_a_counter(aged: Octel) -> None:
    counters, scraped = _aggregates(aged), _scrape(aged)
    assert any(name.startswith("octel_cycles_total") for name, _ in scraped)
    r = aged("prune", "--older-than", "30d")
    assert r.exit_code == 0, r.output + r.stderr
    assert "removed" in r.stdout
    assert _ids(aged, SessionIndex, "session_id") == {
        "ses_s",
        "ses_s1",
        "ses_e",
        "ses_c",
        "ses_mixed",
        "ses_mixed1",
        "ses_new",
    }
    assert _ids(aged, Finding, "session_id") == {"ses_s1"}
    assert _ids(aged, Cycle, "cycle_id") == {"cyc-failed", "cyc-open"}
    assert _ids(aged, AgentRun, "run_key") == {"run-old-err", "run-new"}
    left = {p.name for p in (aged.data_dir / "archives").iterdir()}
    assert "ses_h.json" not in left and "ses_h1.json" not in left and "ses_s1.json" in left
    assert _aggregates(aged) == counters
    after = _scrape(aged)
    for key, value in scraped.items():
        assert after.get(key, -1) >= value, key
    assert aged.json("prune", "--older-than", "30d")["sessions"] == 0  # nothing left to do


def test_no_keep_failures_removes_every_old_tree_but_not_open_cycles(aged: Octel) -> None:
    counters = _aggregates(aged)
    got = aged.json("prune", "--older-than", "30d", "--no-keep-failures")
    assert got["kept"] == {"sessions": 0, "cycles": 0, "agent_runs": 0}
    assert _ids(aged, SessionIndex, "session_id") == {"ses_mixed", "ses_mixed1", "ses_new"}
    assert _ids(aged, Cycle, "cycle_id") == {"cyc-open"}
    assert _ids(aged, AgentRun, "run_key") == {"run-new"}
    assert _aggregates(aged) == counters
    with session_scope(aged.engine, write=False) as db:
        assert db.exec(select(func.count()).select_from(Finding)).one() == 0


@pytest.mark.parametrize("value", ["soon", "0s", "-3d"])
def test_bad_age_exits_2(octel: Octel, value: str) -> None:
    r = octel("prune", "--older-than", value)
    assert r.exit_code == 2 and "--older-than" in r.stderr
