"""Transcripts users publish are renamed (`claude-session.jsonl`, `claude.jsonl`): two of them
in two project folders were one session named `claude-session` to `octel import claude` (one
archived, the other's archive write failing its read-back). A transcript is the session its
lines name when its file name is no session id; a file the CLI named keeps its name's id."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from sqlmodel import select
from typer.testing import CliRunner

from cli import app
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

PUBLISHED = Path(__file__).parents[1] / "corpus" / "claude_published" / "tuning" / "projects"
TWO = [next((PUBLISHED / f"-published-{p}").glob("*.jsonl")) for p in ("uzaxirr-raze", "ved08-hunch")]


def _import(cfg: Path, data: Path) -> tuple[dict[str, Any], dict[str, SessionIndex]]:
    r = CliRunner().invoke(app, ["--data-dir", str(data), "import", "claude", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    engine = make_engine(f"sqlite:///{data / 'octel.db'}")
    try:
        with session_scope(engine, write=False) as db:
            rows = {row.session_id: row for row in db.exec(select(SessionIndex))}
            db.expunge_all()
    finally:
        engine.dispose()
    return json.loads(r.output), rows


def test_two_renamed_transcripts_are_two_sessions(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    for i, src in enumerate(TWO):
        project = cfg / "projects" / f"-home-dev-p{i}"
        project.mkdir(parents=True)
        shutil.copy(src, project / "claude-session.jsonl")
    report, rows = _import(cfg, tmp_path / "data")
    assert report["sessions"] == report["archived"] == 2 and report["problems"] == []
    assert set(rows) == {src.stem for src in TWO}  # the ids their lines name
    _, alone = _import(TWO[0].parents[2], tmp_path / "alone")
    ours = rows[TWO[0].stem]
    assert (ours.tokens_output, ours.cost_usd) == (
        alone[TWO[0].stem].tokens_output,
        alone[TWO[0].stem].cost_usd,
    )
    again, _ = _import(cfg, tmp_path / "data")
    assert again["unchanged"] == 2


def test_a_file_the_cli_named_keeps_its_names_id(tmp_path: Path) -> None:
    # a session file whose first lines name another session (a resumed or forked one) is still
    # the session its name says
    project = tmp_path / "cfg" / "projects" / "-home-dev-p"
    project.mkdir(parents=True)
    other = "0f0f0f0f-1111-4222-8333-444455556666"
    shutil.copy(TWO[0], project / f"{other}.jsonl")
    _, rows = _import(tmp_path / "cfg", tmp_path / "data")
    assert set(rows) == {other}
