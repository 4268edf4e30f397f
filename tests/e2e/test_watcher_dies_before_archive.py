"""A watcher killed with `kill -9` while a finished tree waits to be archived: the watcher
that takes the lease over with `--archive-existing` archives that tree (it never reached the
store, though it was there before the first watcher began), and one started
while the dead watcher's lease still runs follows the server's events from its first second,
so a tree that ends and is deleted before the lease runs out is archived from those events."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest
from driver import run_prompt, wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from watch_process import holder, stop_watch, watch_process

from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex

pytestmark = [pytest.mark.opencode]

LEASE_S = 6.0


def _archived(engine: Engine, root: str) -> bool:
    with session_scope(engine, write=False) as db:
        q = select(SessionIndex.session_id).where(col(SessionIndex.session_id) == root)
        return db.exec(q).first() is not None


def test_a_tree_left_unarchived_by_a_killed_watcher_is_archived_by_the_next(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.load({"title": "Tree", "turns": [], "default": {"text": "Hello."}})
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(db_url)
    upgrade(engine)
    log = tmp_path / "watch.log"
    http = httpx.Client(base_url=opencode.url, timeout=15)
    root = run_prompt(http, "Hi.", session={"title": "left behind"})["root"]
    # a settle far longer than the test: the first watcher never archives the tree
    first = watch_process(
        opencode.url, db_url, tmp_path / "data", log, "--settle", "600", "--archive-existing", lease=LEASE_S
    )
    second = None

    try:
        wait_for(lambda: f":{first.pid}:" in holder(engine), timeout=60)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        assert not _archived(engine, root)
        second = watch_process(
            opencode.url, db_url, tmp_path / "data", log, "--settle", "1", "--archive-existing", lease=LEASE_S
        )
        wait_for(lambda: _archived(engine, root), timeout=90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
    finally:
        http.close()
        for p in (first, second):
            if p is not None:
                stop_watch(p)
        engine.dispose()


def test_a_tree_deleted_while_the_dead_watchers_lease_runs_is_archived(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.load({"title": "Tree", "turns": [], "default": {"text": "Hello."}})
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(db_url)
    upgrade(engine)
    log = tmp_path / "watch.log"
    # a lease long enough for a whole tree to begin, end and be deleted before it runs out (a
    # tree of one prompt to the fake model takes a few seconds; the holder is checked after it)
    first = watch_process(opencode.url, db_url, tmp_path / "data", log, "--settle", "600", lease=25.0)
    second = None
    http = httpx.Client(base_url=opencode.url, timeout=15)

    try:
        wait_for(lambda: f":{first.pid}:" in holder(engine), timeout=60)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
        second = watch_process(opencode.url, db_url, tmp_path / "data", log, "--settle", "1", lease=25.0)
        wait_for(lambda: "standing by" in log.read_text(), timeout=60)
        # begun, finished and deleted while the dead watcher's lease still runs
        root = run_prompt(http, "Hi.", session={"title": "gone in the gap"})["root"]
        http.delete(f"/session/{root}")
        assert f":{first.pid}:" in holder(engine)  # still the dead one's lease
        wait_for(lambda: _archived(engine, root), timeout=90)
        assert "from the mirror" in log.read_text()
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{log.read_text()[-3000:]}") from None
    finally:
        http.close()
        for p in (first, second):
            if p is not None:
                stop_watch(p)
        engine.dispose()
