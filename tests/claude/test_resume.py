"""A session that grew is read from where its files stopped, and the archive is the one a
read of the whole files makes: the same messages, totals, findings and redaction counts, a
message whose blocks straddle the two reads counted once, nothing counted twice."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from archiver.files import read_archive
from telemetry.services.claude.importer import import_claude
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

# a secret in the part of the file read second, and one in the part read first
_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
_RUNS = ("d_subagent_tree", "c_doom_loop", "e_retry_529")


def _session(run: str) -> list[tuple[str, bytes]]:
    """(path in the project folder, bytes) of a captured session, a secret in its first and last prompt."""
    (project,) = (FIXTURES / run / "json" / "projects").iterdir()
    out = []
    for p in sorted(project.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.suffix == ".jsonl" and p.parent == project:
                sid = p.stem
                line = (
                    b'{"type":"user","uuid":"u-%s","sessionId":"%s","timestamp":"2026-11-30T10:09:00Z",'
                    % (b"x", sid.encode())
                )
                data = data.replace(b"Say hello", b"Say hello " + _TOKEN.encode(), 1)
                data += line + b'"message":{"role":"user","content":"use ' + _TOKEN.encode() + b' now"}}\n'
            out.append((p.relative_to(project).as_posix(), data))
    return out


def _cuts(data: bytes, draw: Any) -> int:
    """A cut at a line boundary, or inside a line (a line being written)."""
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    at = draw(st.sampled_from([0, *ends]))
    if draw(st.booleans()) and at < len(data):
        at += draw(st.integers(1, max(1, min(200, len(data) - at - 1))))
    return min(at, len(data))


def _import(cfg: Path, data: Path) -> dict[str, Any]:
    # one redaction key for both stores, so the same secret has the same placeholder
    s = Settings(data_dir=data, redact_key_file=data.parent / "redact.key")
    engine = make_engine(s.db_url)
    try:
        upgrade(engine)
        return dataclasses.asdict(import_claude(cfg, settings=s, engine=engine))
    finally:
        engine.dispose()


def _docs(data: Path) -> dict[str, dict[str, Any]]:
    docs = {}
    for p in (data / "archives").iterdir():
        doc = read_archive(p)
        doc.pop("archived_at")
        docs[doc["session_id"]] = doc
    return docs


@settings(
    max_examples=30,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example imports three times
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(run=st.sampled_from(_RUNS), data=st.data())
def test_a_grown_session_archives_as_if_read_whole(
    tmp_path_factory: pytest.TempPathFactory, run: str, data: Any
) -> None:
    tmp = tmp_path_factory.mktemp("grown")
    files = _session(run)
    project = tmp / "claude" / "projects" / "-p"
    whole_data, grown_data = tmp / "whole", tmp / "grown"
    for rel, body in files:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_bytes(body)
    assert _import(tmp / "claude", whole_data)["archived"] == 1
    cuts = {rel: _cuts(body, data.draw) if rel.endswith(".jsonl") else len(body) for rel, body in files}
    for rel, body in files:
        (project / rel).write_bytes(body[: cuts[rel]])
    first = _import(tmp / "claude", grown_data)
    # cut before its first conversation line, the file holds none yet: skipped, not archived
    nothing = first["empty"] == 1
    assert first["archived"] == (0 if nothing else 1)
    for rel, body in files:
        with (project / rel).open("ab") as fh:
            fh.write(body[cuts[rel] :])
    again = _import(tmp / "claude", grown_data)
    grew = any(cuts[rel] < len(body) for rel, body in files)
    assert (again["archived"], again["resumed"]) == ((1, 0) if nothing else (1, 1) if grew else (0, 0))
    assert _docs(grown_data) == _docs(whole_data)


def test_a_rewritten_file_is_read_whole(tmp_path: Path) -> None:
    (rel, body), *_ = [f for f in _session("b_bash_tool") if f[0].endswith(".jsonl")]
    project = tmp_path / "claude" / "projects" / "-p"
    project.mkdir(parents=True)
    (project / rel).write_bytes(body)
    _import(tmp_path / "claude", tmp_path / "data")
    (project / rel).write_bytes(body.replace(b"Run a command", b"Run another command", 1) + b"\n")
    again = _import(tmp_path / "claude", tmp_path / "data")
    assert (again["archived"], again["resumed"]) == (1, 0)
    whole = tmp_path / "whole"
    _import(tmp_path / "claude", whole)
    assert _docs(tmp_path / "data") == _docs(whole)


def test_the_state_keeps_no_text(tmp_path: Path) -> None:
    files = _session("d_subagent_tree")
    project = tmp_path / "claude" / "projects" / "-p"
    for rel, body in files:
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_bytes(body)
    _import(tmp_path / "claude", tmp_path / "data")
    state = (tmp_path / "data" / "claude-import-state.json").read_bytes()
    assert _TOKEN.encode() not in state and b"hello" not in state.lower()
    entry = next(iter(orjson.loads(state)["sessions"].values()))
    assert set(entry["resume"]) == {"files", "usage"}
    shutil.rmtree(tmp_path / "claude")
