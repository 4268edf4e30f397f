"""Trees prepared in worker processes are the trees prepared in-process, in the same order;
written by the workers, they are indexed only once on disk, and a bad one is skipped."""

from __future__ import annotations

import contextlib
import gc
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES, assistant, user, write
from typer.testing import CliRunner

from archiver.batch import Prepared
from archiver.claude import pool
from archiver.claude.layout import find_sessions
from archiver.claude.pool import prepared_trees, workers_for
from archiver.claude.tree import ClaudeTree
from archiver.files import content_hash
from archiver.redact import Redactor
from cli import app
from telemetry.services.claude import early as claude_early

RED = Redactor(b"k" * 32, ["configured-secret-value-1"])


def _plain(data: bytes) -> dict[str, Any]:
    doc = orjson.loads(data)
    doc.pop("archived_at")
    return dict(doc)


@pytest.mark.parametrize("threads", [1, 2], ids=["forked", "forkserver"])
def test_workers_prepare_what_this_process_prepares(
    tmp_path: Path, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pool.threading, "active_count", lambda: threads)
    runs = ["a_text_answer", "c_doom_loop", "d_subagent_tree", "e_retry_529"]
    for i, run in enumerate(runs):
        for project in (FIXTURES / run / "json" / "projects").iterdir():
            shutil.copytree(project, tmp_path / "projects" / f"{project.name}-{i}")
    sessions = find_sessions(tmp_path)
    here = list(prepared_trees(sessions, RED))
    there = list(prepared_trees(sessions, RED, workers=2))
    assert (
        [f.session_id for f, _ in there]
        == [f.session_id for f, _ in here]
        == [s.session_id for s in sessions]
    )
    for (_, a), (_, b) in zip(here, there, strict=True):
        assert [_plain(d) for _, d in a.files] == [_plain(d) for _, d in b.files]
        assert a.result.walk_errors == b.result.walk_errors


def test_few_sessions_or_one_cpu_run_in_process() -> None:
    assert workers_for(10, cpus=8) == 0
    assert workers_for(1000, cpus=1) == 0
    assert workers_for(1000, cpus=2) == 4


@pytest.mark.parametrize("threads", [1, 2], ids=["forked", "forkserver"])
def test_workers_write_the_files_the_index_then_names(
    tmp_path: Path, threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder large enough for worker processes: they write each archive file; every index
    row names a file holding the bytes it was indexed from; a session the reader fails on and
    one past the size limit are reported and skipped; nothing half-written stays behind; a
    re-run reads nothing again."""
    monkeypatch.setattr(pool.threading, "active_count", lambda: threads)
    monkeypatch.setattr(claude_early, "_EARLY", 16)  # the rest is written by the workers
    project = tmp_path / "claude" / "projects" / "-work"
    sids = [f"s{i:03d}" for i in range(70)]
    for sid in sids:
        write(project / f"{sid}.jsonl", [user(sid, f"question {sid}"), *assistant(sid, f"m-{sid}", [])])
    write(project / "boom.jsonl", [user("boom", "hi")])
    write(project / "big.jsonl", [user("big", "x" * 300_000)])
    real = pool.prepare_claude_tree

    def faulty(tree: ClaudeTree, *args: Any, **kw: Any) -> Prepared:
        if tree.root_id == "boom":  # a fault no reader foresaw, raised inside a worker
            raise RecursionError("maximum recursion depth exceeded")
        return real(tree, *args, **kw)

    if threads == 1:  # a forked worker runs this process's code as it is now
        monkeypatch.setattr(pool, "prepare_claude_tree", faulty)
    monkeypatch.setenv("OCTEL_ARCHIVE_MAX_BYTES", "200000")
    data = tmp_path / "data"
    args = ["--data-dir", str(data), "import", "claude", str(tmp_path / "claude"), "--json"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 1, r.output  # sessions were left unarchived
    report = json.loads(r.stdout)
    assert report["archived"] == 70 + (threads == 2)
    kinds = {(p.get("session_id") or "", p["error_kind"]) for p in report["problems"]}
    assert any(k == "write" for _, k in kinds)  # big: past the limit, reported
    assert (("boom", "unreadable") in kinds) == (threads == 1)
    db = sqlite3.connect(data / "octel.db")
    rows = db.execute("SELECT session_id, archive_path, content_hash FROM session_index").fetchall()
    db.close()
    archives = data / "archives"
    assert sorted(r[0] for r in rows) == sorted(sids + ([] if threads == 1 else ["boom"]))
    for _, name, digest in rows:  # each row names a file written in full, the bytes it indexed
        assert content_hash((archives / name).read_bytes()) == digest
    assert sorted(p.name for p in archives.iterdir()) == sorted(r[1] for r in rows)  # no .part
    again = json.loads(CliRunner().invoke(app, args).stdout)
    assert again["unchanged"] == len(rows) and again["archived"] == 0


def test_fewer_collections_inside_an_import_and_as_before_after() -> None:
    was = gc.get_threshold()
    with pool.fewer_collections():
        assert gc.get_threshold()[0] > was[0]
    assert gc.get_threshold() == was
    with contextlib.suppress(RuntimeError), pool.fewer_collections():
        raise RuntimeError("an import that failed")
    assert gc.get_threshold() == was
