"""Trees prepared in worker processes are the trees prepared in-process, in the same order."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from claude_lines import FIXTURES

from archiver.claude import pool
from archiver.claude.layout import find_sessions
from archiver.claude.pool import prepared_trees, workers_for
from archiver.redact import Redactor

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
    assert workers_for(1000, cpus=2) == 2
