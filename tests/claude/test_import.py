"""`octel import claude DIR`: every transcript archived once, a re-run reads only what changed."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from claude_lines import FIXTURES, assistant, user, write
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import select
from typer.testing import CliRunner

from cli import app
from telemetry.services.claude.state import near_cleanup, unchanged_report
from telemetry.store.aggregates import bump, coalesced, read_all
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex


def _config(tmp_path: Path, *runs: str) -> Path:
    """One config folder holding the projects of several captured runs."""
    cfg = tmp_path / "claude"
    for i, run in enumerate(runs):
        for project in (FIXTURES / run / "json" / "projects").iterdir():
            shutil.copytree(project, cfg / "projects" / f"{project.name}-{i}")
    return cfg


def _import(tmp_path: Path, *args: str) -> dict[str, Any]:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "import", "claude", *args, "--json"])
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def _rows(tmp_path: Path) -> list[SessionIndex]:
    engine = make_engine(f"sqlite:///{tmp_path / 'data' / 'octel.db'}")
    try:
        with session_scope(engine) as db:
            rows = list(db.exec(select(SessionIndex).order_by(SessionIndex.session_id)).all())
            db.expunge_all()
            return rows
    finally:
        engine.dispose()


def test_import_is_incremental_and_idempotent(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer", "c_doom_loop", "d_subagent_tree")
    first = _import(tmp_path, str(cfg))
    assert (first["sessions"], first["archived"], first["files_written"], first["indexed_new"]) == (
        3,
        3,
        4,
        4,
    )
    rows = _rows(tmp_path)
    assert len(rows) == 4 and {r.source for r in rows} == {"claude_code"}
    again = _import(tmp_path, str(cfg))
    assert (again["archived"], again["unchanged"], again["files_written"]) == (0, 3, 0)
    # a session that grew is read again, and only that one; its row is updated, not doubled
    (main,) = (cfg / "projects").glob("*-1/*.jsonl")
    sid = main.stem
    with main.open("ab") as fh:
        fh.write(json.dumps(user(sid, "one more thing")).encode() + b"\n")
    grown = _import(tmp_path, str(cfg))
    assert (grown["archived"], grown["unchanged"], grown["indexed_updated"]) == (1, 2, 1)
    assert len(_rows(tmp_path)) == 4
    assert len(list((tmp_path / "data" / "archives").iterdir())) == 4


def test_losing_the_state_file_costs_time_not_double_counts(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "d_subagent_tree")
    _import(tmp_path, str(cfg))
    (tmp_path / "data" / "claude-import-state.json").unlink()
    again = _import(tmp_path, str(cfg))
    assert again["archived"] == 1 and again["indexed_new"] == 0 and len(_rows(tmp_path)) == 2


def test_the_state_of_another_store_is_not_trusted(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer", "d_subagent_tree")
    _import(tmp_path, str(cfg))
    assert _import(tmp_path, str(cfg))["unchanged"] == 2
    for f in (tmp_path / "data").glob("octel.db*"):  # the store is gone; its state file stays
        f.unlink()
    again = _import(tmp_path, str(cfg))
    assert (again["archived"], again["unchanged"], again["indexed_new"]) == (2, 0, 3)
    assert len(_rows(tmp_path)) == 3


def test_a_damaged_entry_of_the_state_costs_its_session_a_read_only(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer", "d_subagent_tree")
    _import(tmp_path, str(cfg))
    path = tmp_path / "data" / "claude-import-state.json"
    state = json.loads(path.read_text())
    first, second = sorted(state["sessions"])
    state["sessions"][first] = "not an entry"
    state["sessions"][second] = {**state["sessions"][second], "resume": ["not", "a", "resume"]}
    path.write_text(json.dumps(state))
    again = _import(tmp_path, str(cfg))
    assert (again["archived"], again["unchanged"], again["indexed_new"]) == (1, 1, 0)
    kept = json.loads(path.read_text())["sessions"]
    assert set(kept) == {first, second} and isinstance(kept[first], dict)


def test_an_unchanged_folder_is_answered_from_the_state_alone(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer", "d_subagent_tree")
    data = tmp_path / "data"
    db, key = f"sqlite:///{data / 'octel.db'}", data / "redact.key"
    assert unchanged_report(cfg, data, db, key) is None  # nothing imported yet
    _import(tmp_path, str(cfg))
    quick = unchanged_report(cfg, data, db, key)
    assert quick is not None and (quick.sessions, quick.unchanged, quick.archived) == (2, 2, 0)
    assert _import(tmp_path, str(cfg)) == dataclasses.asdict(quick)
    (main,) = (cfg / "projects").glob("*-0/*.jsonl")
    with main.open("ab") as fh:
        fh.write(json.dumps(user(main.stem, "more")).encode() + b"\n")
    assert unchanged_report(cfg, data, db, key) is None


def test_default_folder_is_claude_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(_config(tmp_path, "a_text_answer")))
    assert _import(tmp_path)["archived"] == 1


def test_a_folder_that_is_not_there_is_a_clear_error(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path), "import", "claude", str(tmp_path / "nope")])
    assert r.exit_code == 2 and "not a folder" in r.stderr


def test_bad_files_are_reported_and_the_rest_imported(tmp_path: Path) -> None:
    cfg = tmp_path / "claude"
    project = cfg / "projects" / "-work"
    write(
        project / "good.jsonl",
        [user("good", "hi"), *assistant("good", "m1", [{"type": "text", "text": "ok"}])],
    )
    (project / "bad.jsonl").write_bytes(b'{"type": "user", "sessionId": "bad"}\n{oops\n')
    write(project / "lost" / "subagents" / "agent-x1.jsonl", [user("lost", "go", agentId="x1")])
    report = _import(tmp_path, str(cfg))
    assert report["archived"] == 3
    kinds = sorted(p["error_kind"] for p in report["problems"])
    assert kinds == ["malformed", "missing_meta", "orphan", "orphan"]


def test_the_table_output(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer")
    r = CliRunner().invoke(app, ["--data-dir", str(tmp_path / "data"), "import", "claude", str(cfg)])
    assert r.exit_code == 0 and "1 archived" in r.stdout


def test_sessions_near_the_cleanup_age() -> None:
    now = time.time()
    old = [["f", 1, int((now - 27 * 86_400) * 1e9)]]
    fresh = [["f", 1, int((now - 3 * 86_400) * 1e9)]]
    assert near_cleanup(old, 30, now) and not near_cleanup(fresh, 30, now)
    assert not near_cleanup(old, 60, now)


def test_watch_archives_quiet_sessions_and_leaves_busy_ones(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "a_text_answer", "b_bash_tool")
    (busy,) = (cfg / "projects").glob("*-1/*.jsonl")
    quiet_since = time.time() - 120
    for f in cfg.rglob("*.jsonl"):
        os.utime(f, None if f == busy else (quiet_since, quiet_since))
    base = ["--data-dir", str(tmp_path / "data"), "watch", "--claude-dir", str(cfg)]
    r = CliRunner().invoke(app, [*base, "--claude-quiet", "60", "--poll-interval", "0.2", "--for", "1"])
    assert r.exit_code == 0, r.output
    assert "archived 1 Claude Code sessions" in r.stderr
    assert [row.session_id for row in _rows(tmp_path)] != [busy.stem] and len(_rows(tmp_path)) == 1


_BUMPS = st.lists(
    st.tuples(
        st.sampled_from(["session_tokens_total", "findings_total"]),
        st.sampled_from(["a", "b"]),
        st.integers(0, 1000),
    ),
    max_size=20,
)


@settings(max_examples=30, deadline=None)
@given(_BUMPS)
def test_coalesced_counters_equal_counters_bumped_one_by_one(bumps: list[tuple[str, str, int]]) -> None:
    def total(coalesce: bool) -> list[tuple[str, dict[str, str], float]]:
        engine = make_engine("sqlite://")
        upgrade(engine)
        try:
            with session_scope(engine) as db, coalesced(db) if coalesce else contextlib.nullcontext():
                for metric, label, delta in bumps:
                    bump(db, metric, {"agent": label}, delta)
            with session_scope(engine) as db:
                return sorted(read_all(db), key=lambda x: (x[0], str(x[1])))
        finally:
            engine.dispose()

    one_by_one = total(False)
    assert total(True) == one_by_one
    assert len(one_by_one) == len({(m, a) for m, a, d in bumps if d})


def test_a_private_model_is_named_unpriced_then_priced_by_the_price_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model no price database lists is named, not free; given a price file, the next import
    prices it without the transcript changing (the state file names the prices it used), and
    the archive keeps what priced it."""
    from archiver.files import read_archive

    cfg = tmp_path / "claude"
    write(
        cfg / "projects" / "-p" / "s1.jsonl",
        [user("s1", "hi"), *assistant("s1", "m1", [{"type": "text", "text": "yo"}], model="acme-coder-2")],
    )
    first = _import(tmp_path, str(cfg))
    (row,) = _rows(tmp_path)
    assert first["archived"] == 1 and row.unpriced_models == "acme-coder-2" and row.cost_usd == 0.0
    prices = tmp_path / "prices.json"
    prices.write_text(
        '{"models": {"acme-coder-2": {"input": 1000000, "output": 0, "cache_read": 0,'
        ' "cache_write_5m": 0, "cache_write_1h": 0}}}'
    )
    monkeypatch.setenv("OCTEL_PRICE_FILE", str(prices))
    again = _import(tmp_path, str(cfg))
    (row,) = _rows(tmp_path)
    assert again["archived"] == 1 and not row.unpriced_models and row.cost_usd == pytest.approx(100.0)
    doc = read_archive(next((tmp_path / "data" / "archives").rglob("*.json*")))
    assert (
        doc["cost_check"]["prices"]["source"] == "genai-prices" and doc["cost_check"]["prices"]["price_file"]
    )
    assert _import(tmp_path, str(cfg))["archived"] == 0  # the same prices: nothing read again
    assert _import(tmp_path, str(cfg), "--reprice")["archived"] == 1
