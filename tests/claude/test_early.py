"""Workers started before the store is open write nothing the import's own plan leaves out."""

from __future__ import annotations

import os
import time
from pathlib import Path

from claude_lines import assistant, user, write

from cli.app import open_store
from telemetry.services.claude.early import start_early
from telemetry.services.claude.importer import import_claude
from telemetry.settings import Settings


def test_sessions_handed_over_early_are_written_only_when_the_plan_keeps_them(tmp_path: Path) -> None:
    project = tmp_path / "claude" / "projects" / "-work"
    now = time.time()
    for i in range(80):
        sid = f"s{i:03d}"
        path = write(project / f"{sid}.jsonl", [user(sid, "hi"), *assistant(sid, f"m-{sid}", [])])
        old = now - 3600 if i % 2 else now  # the even ones are still being written
        os.utime(path, (old, old))
    settings = Settings(data_dir=tmp_path / "data")
    early = start_early(tmp_path / "claude", settings, None)
    assert early is not None and len(early.keys) == 80  # every one handed over
    try:
        with open_store(settings) as engine:
            report = import_claude(
                tmp_path / "claude", settings=settings, engine=engine, quiet_seconds=30, early=early, now=now
            )
    finally:
        early.close()
    assert (report.archived, report.still_writing, report.files_written) == (40, 40, 40)
    names = sorted(p.name for p in settings.archives.iterdir())
    assert len(names) == 40 and all(int(n.split("__")[-1][1:4]) % 2 for n in names)
