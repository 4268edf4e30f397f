"""Crashes at any moment leave no torn file, no index row without its file and no temporary
file after a restart; `octel doctor` finds rows whose file is gone and `--repair` fixes them."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import random
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import httpx
from archiver_fakes import LoopbackServer, tree
from typer.testing import CliRunner

from archiver.files import find_archives, read_archive, remove_stale_parts
from archiver.redact import load_key
from archiver.validate import check_archive
from cli import app
from telemetry.archiving import archive_session_tree_async, redactor_for
from telemetry.services.index.archive_import import import_archives
from telemetry.services.index.archive_repair import check_index
from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade


def _octel(data: Path, *args: str) -> Any:
    runner = CliRunner(env={"COLUMNS": "300", "NO_COLOR": "1", "OCTEL_REDACT_VALUES": ""})
    return runner.invoke(app, ["--data-dir", str(data), *args])


def _checks(data: Path) -> dict[str, dict[str, Any]]:
    res = _octel(data, "doctor", "--json")
    return {c["name"]: c for c in json.loads(res.stdout)["checks"]}


def test_doctor_finds_rows_without_files_and_repair_fixes_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with LoopbackServer(tree([2])) as srv:
        assert _octel(data, "archive", "ses_root", "--server", srv.url).exit_code == 0
    archives = data / "archives"
    assert _checks(data)["archive index"]["status"] == "ok"
    files = {p.name.rsplit("__", 1)[1]: p for p in find_archives(archives)}
    # one file gone for good; another replaced by a later archive of the same session
    files["ses_d1_0.json"].unlink()
    later = archives / files["ses_d1_1.json"].name.replace("__sub1__", "__sub1__", 1).replace(
        "2026", "2099", 1
    )
    files["ses_d1_1.json"].rename(later)
    (archives / ".tmp-dead.part").write_bytes(b'{"half')
    check = _checks(data)["archive index"]
    assert check["status"] == "fail" and "2 of 3 index rows" in check["detail"]
    assert "octel doctor --repair" in check["fix"]
    res = _octel(data, "doctor", "--repair", "--json")
    repaired = json.loads(res.stdout)["repaired"]
    spend = repaired.pop("spend")  # the daily spend summary is rebuilt from what is left
    assert repaired == {"repointed": ["ses_d1_1"], "removed": ["ses_d1_0"], "stale_parts_removed": 1}
    assert spend["groups"] >= 1
    assert _checks(data)["archive index"]["status"] == "ok"
    shown = json.loads(_octel(data, "sessions", "show", "ses_d1_1", "--json").stdout)
    assert shown["session"]["archive_path"] == later.name


def _worker(data: str, ready: Any) -> None:
    """Archive a tree again and again, and import the folder every third round (in a child
    process, until it is killed)."""
    settings = Settings(data_dir=Path(data), _env_file=None)  # type: ignore[call-arg]
    engine = make_engine(settings.db_url)

    async def main() -> None:
        for i in range(10_000):
            if i == 1:
                ready.set()  # after one whole round: every kill lands in a later one
            if i % 3 == 2:
                import_archives(engine, settings.archives, settings, redactor_for(settings))
            else:
                await _archive_tree(settings, engine)

    asyncio.run(main())


async def _archive_tree(settings: Settings, engine: Any) -> None:
    async with httpx.AsyncClient(transport=tree([2, 1], n_messages=30).transport()) as http:
        out = await archive_session_tree_async(
            "ses_root", settings=settings, engine=engine, server_url="http://oc.test", http=http
        )
    assert out.ok, out.to_dict()


def test_kill_9_at_random_moments_of_archiving_and_indexing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, _env_file=None)  # type: ignore[call-arg]
    data.mkdir()
    engine = make_engine(settings.db_url)
    upgrade(engine)
    engine.dispose()
    load_key(settings.redact_key)
    # forked after the imports, so each child starts at once; killed with SIGKILL at a random
    # moment, then the state a restart finds is checked before the next child runs
    fork = multiprocessing.get_context("fork")
    rnd = random.Random(1234)
    torn: list[str] = []
    orphans: list[tuple[str, str]] = []
    parts: list[str] = []
    for _ in range(30):
        ready = fork.Event()
        child = fork.Process(target=_worker, args=(str(data), ready))
        child.start()
        assert ready.wait(60), "the child archived once"
        time.sleep(rnd.uniform(0.0, 0.6))
        assert child.is_alive(), f"the child ended on its own (exit code {child.exitcode})"
        os.kill(child.pid or 0, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL
        remove_stale_parts(settings.archives)  # what a restart does
        parts += [p.name for p in settings.archives.glob(".tmp-*")]
        for p in find_archives(settings.archives):
            try:
                check_archive(read_archive(p))
            except ValueError as exc:
                torn.append(f"{p.name}: {exc}")
        engine = make_engine(settings.db_url)
        try:
            orphans += check_index(engine, settings).missing
        finally:
            engine.dispose()
    assert (torn, orphans, parts) == ([], [], []), "no torn file, no row without its file, no temporary file"
    # a kill after a new document was written and before the older one was removed leaves both;
    # the next archive of the tree removes every older document of its sessions
    engine = make_engine(settings.db_url)
    try:
        asyncio.run(_archive_tree(settings, engine))
        assert check_index(engine, settings).missing == []
    finally:
        engine.dispose()
    assert len(find_archives(settings.archives)) == 4
    shutil.rmtree(data)


def _hold_lock(path: str, ready: Any, stop: Any) -> None:
    import fcntl

    fd = os.open(path, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    ready.set()
    stop.wait(30)


def test_a_live_writers_temporary_file_is_left_alone(tmp_path: Path) -> None:
    live = tmp_path / ".tmp-live.part"
    dead = tmp_path / ".tmp-dead.part"
    live.write_bytes(b"{")
    dead.write_bytes(b"{")
    fork = multiprocessing.get_context("fork")
    ready, stop = fork.Event(), fork.Event()
    writer = fork.Process(target=_hold_lock, args=(str(live), ready, stop))
    writer.start()
    try:
        assert ready.wait(30)
        assert remove_stale_parts(tmp_path) == [dead] and live.exists()
    finally:
        stop.set()
        writer.join()
    assert remove_stale_parts(tmp_path) == [live]
