"""A Claude Code folder or file named like a secret (a working directory named after a token,
a transcript or subagent file named by one) leaves that text in no file of the data folder:
not in the archives, the store, nor the import's own state, which still answers a second
import of the unchanged folder, and still lets a grown session be read from where it stopped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
from claude_lines import FIXTURES, assistant, user, write
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text
from typer.testing import CliRunner

from archiver.claude.resume import named_entry, state_namer
from cli import app
from telemetry.store.db import make_engine

SECRETS = [
    "ghp_" + "FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "sk-ant-api03-FAKEfakeFAKEfakeFAKEfake-00",
    "AKIAFAKEFAKEFAKEFAKE",
]
_TREE = FIXTURES / "d_subagent_tree" / "json" / "projects" / "-home-dev-project"


def _folder(tmp_path: Path, *, agent: bool = True) -> Path:
    """A project folder named after a token holding: a session from the fixtures whose
    subagent files are named by another token (with ``agent``), a session file named by a
    third, and a session with an answer whose message id is a token."""
    project = tmp_path / "claude" / "projects" / f"-home-ann-repos-{SECRETS[1]}"
    shutil.copytree(_TREE, project)
    (sub,) = project.glob("*/subagents/agent-*.jsonl")
    if agent:
        name = sub.name.removesuffix(".jsonl")
        sub.rename(sub.with_name(f"agent-{SECRETS[2]}.jsonl"))
        sub.with_name(f"{name}.meta.json").rename(sub.with_name(f"agent-{SECRETS[2]}.meta.json"))
    write(project / f"{SECRETS[0]}.jsonl", [user(SECRETS[0], "hi"), *assistant(SECRETS[0], "m1", [])])
    # and an answer whose message id is one (the state counts usage by message id)
    write(
        project / "plain.jsonl",
        [user("plain", "hi"), *assistant("plain", SECRETS[1], [{"type": "text", "text": "ok"}])],
    )
    return tmp_path / "claude"


def _import(cfg: Path, data: Path) -> dict[str, Any]:
    runner = CliRunner(env={"OCTEL_REDACT_VALUES": "", "OCTEL_ARCHIVE_STORE": "files"})
    r = runner.invoke(app, ["--data-dir", str(data), "import", "claude", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    return dict(json.loads(r.stdout))


def _kept(data: Path) -> bytes:
    """Every byte octel keeps in the data folder: each file's name and contents, the import's
    state included, and the store's rows."""
    files = [p for p in data.rglob("*") if p.is_file()]
    assert any(p.name == "claude-import-state.json" for p in files)
    out = b"".join(str(p.relative_to(data)).encode() + p.read_bytes() for p in files)
    eng = make_engine(f"sqlite:///{data / 'octel.db'}")
    try:
        with eng.connect() as conn:
            out += "\n".join(conn.connection.driver_connection.iterdump()).encode()  # type: ignore[union-attr]
            assert conn.execute(text("select count(*) from session_index")).scalar_one() >= 3
    finally:
        eng.dispose()
    return out


def test_secret_names_reach_no_file_of_the_data_folder(tmp_path: Path) -> None:
    cfg, data = _folder(tmp_path), tmp_path / "data"
    first = _import(cfg, data)
    assert (first["sessions"], first["archived"]) == (3, 3)
    kept = _kept(data)
    assert [s for s in SECRETS if s.encode() in kept] == []
    again = _import(cfg, data)
    assert (again["unchanged"], again["archived"]) == (3, 0)
    assert [s for s in SECRETS if s.encode() in _kept(data)] == []


def test_a_state_of_the_older_layout_is_not_trusted(tmp_path: Path) -> None:
    cfg, data = _folder(tmp_path), tmp_path / "data"
    _import(cfg, data)
    state = data / "claude-import-state.json"
    kept = json.loads(state.read_bytes())
    state.write_text(json.dumps({**kept, "version": 2}))  # the layout that kept paths
    again = _import(cfg, data)
    assert (again["archived"], again["unchanged"]) == (3, 0)
    assert json.loads(state.read_bytes())["version"] == kept["version"] > 2


def test_a_grown_session_under_a_secret_folder_is_read_from_where_it_stopped(tmp_path: Path) -> None:
    # (a session whose own id is a secret is read whole: its archive knows it only redacted)
    cfg, data = _folder(tmp_path, agent=False), tmp_path / "data"
    _import(cfg, data)
    (main,) = cfg.glob("projects/*/d15e7671-*.jsonl")
    sid = main.stem
    with main.open("ab") as fh:
        fh.write(json.dumps(user(sid, "one more question")).encode() + b"\n")
    again = _import(cfg, data)
    assert (again["archived"], again["resumed"], again["unchanged"]) == (1, 1, 2)
    assert [s for s in SECRETS if s.encode() in _kept(data)] == []


@given(
    st.dictionaries(
        st.text(min_size=1), st.tuples(st.text(), st.integers(0, 2**40), st.integers(0, 2**40)), max_size=4
    ),
    st.sampled_from(SECRETS),
)
def test_a_kept_entry_names_no_path_nor_id_and_needs_the_key(files: dict[str, Any], secret: str) -> None:
    entry = {
        "files": {f"{p}/{secret}": [f"{sid}{secret}", off, n, "ab"] for p, (sid, off, n) in files.items()},
        "usage": {f"{sid}{secret}": {"msg_1": [1, 2, 3, 4, 5]} for sid, _, _ in files.values()},
    }
    kept = named_entry(entry, state_namer(b"k" * 32))
    assert secret.encode() not in orjson.dumps(kept)
    assert [f[1:] for f in kept["files"].values()] == [f[1:] for f in entry["files"].values()]
    other = named_entry(entry, state_namer(b"j" * 32))
    assert not set(kept["files"]) & set(other["files"]) and not set(kept["usage"]) & set(other["usage"])
