"""Soak: a real `opencode serve`, a dispatcher that keeps starting trees (some with a subagent)
and deletes each root the instant it goes idle, and an `octel watch` that is `kill -9`ed the
instant a tree goes busy (it first heard of the tree moments before) while a second one starts at
once, under the dead one's lease. Every tree the dispatcher made is either archived (indexed, its
archive read back valid) or in `octel lost` with a reason: none is missing, trees that ended in
the gap included, the one under way at the kill (deleted before the second was up) too."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from dispatcher import run_and_delete_at_idle
from driver import wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlalchemy.engine import Engine
from sqlmodel import col, select
from watch_process import ROOT, holder, stop_watch, watch_process

from archiver.files import read_archive
from archiver.validate import check_archive
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.lost_models import LOST_REASONS, LostTree
from telemetry.store.migrate import upgrade
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc

pytestmark = [pytest.mark.opencode]

LEASE_S = 6.0
KILL_AT = 3  # trees under the first watcher before the kill; as many under the second
PLAIN = {"title": "Soak", "turns": [], "default": {"text": "Hello."}}
NESTED = {
    "title": "Soak",
    "turns": [
        {
            "text": "Delegating.",
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {"description": "Greet", "prompt": "Say hello.", "subagent_type": "general"},
                }
            ],
        },
        {"text": "Hello from the child."},
        {"text": "All done."},
    ],
    "default": {"text": "Done."},
}


class Dispatcher:
    """One tree after another until stopped, each root deleted the instant it goes idle; every
    third delegates to a subagent. Remembers each root and when it went busy and was deleted.
    Tree number ``kill_at`` calls ``kill`` the instant it goes busy and clears ``go``. While
    ``go`` is clear it starts no new tree (the one under way, ``current``, goes on) and says so
    by setting ``paused``."""

    def __init__(self, url: str, llm: FakeLLM, kill_at: int, kill: Callable[[], None]) -> None:
        self.url, self.llm = url, llm
        self.kill_at, self._kill = kill_at, kill
        self.killed = threading.Event()
        self.wall: dict[str, float] = {}  # root: time.time() once it went busy
        self.roots: list[str] = []
        self.busy: dict[str, float] = {}  # root: time.monotonic() once it went busy
        self.deleted: dict[str, float] = {}  # root: time.monotonic() once the server dropped it
        self.nested: set[str] = set()
        self.errors: list[str] = []
        self.stop, self.go, self.paused = threading.Event(), threading.Event(), threading.Event()
        self.go.set()
        self.current: str | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            if not self.go.is_set():
                self.paused.set()
                self.go.wait(0.2)
                continue
            n = len(self.roots)
            script = NESTED if n % 3 == 2 else PLAIN
            self.llm.load(script)
            seen: list[str] = []

            def busy(root: str, seen: list[str] = seen) -> None:
                seen.append(root)
                self.roots.append(root)
                self.busy[root] = time.monotonic()
                self.wall[root] = time.time()
                self.current = root
                if len(self.roots) == self.kill_at + 1:  # the kill lands as this tree went busy
                    self.go.clear()
                    self._kill()
                    self.killed.set()

            try:
                # titled: OpenCode's title agent would rename the session after it went idle
                run = run_and_delete_at_idle(self.url, "Hi.", session={"title": f"soak {n}"}, on_busy=busy)
            except Exception as exc:  # said by the test: a dispatcher that failed proves nothing
                self.errors.append(f"{type(exc).__name__}: {exc}")
                self.stop.wait(0.5)
                continue
            finally:
                self.current = None
            if not seen:
                self.roots.append(run["root"])
            if script is NESTED:
                self.nested.add(run["root"])
            if run["status"] == 200 and run["gone"]:
                self.deleted[run["root"]] = time.monotonic()
            else:
                self.errors.append(f"{run['root']} not deleted: {run}")

    def done_after(self, t: float) -> int:
        return sum(1 for at in list(self.deleted.values()) if at > t)


def _archived(engine: Engine) -> dict[str, list[SessionIndex]]:
    """Each indexed tree's rows by root."""
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(SessionIndex).order_by(col(SessionIndex.depth))))
    out: dict[str, list[SessionIndex]] = {}
    for r in rows:
        out.setdefault(r.root_session_id, []).append(r)
    return out


def _board(engine: Engine) -> dict[str, float]:
    """The live rows in the store: session id: when it was last written (epoch seconds)."""
    with session_scope(engine, write=False) as db:
        rows = db.exec(select(LiveSession.session_id, LiveSession.updated_at)).all()
    return {sid: as_utc(at).timestamp() for sid, at in rows}


def _lost(db_url: str, data: Path) -> list[dict[str, object]]:
    env = {**os.environ, "OCTEL_DATABASE_URL": db_url, "OCTEL_DATA_DIR": str(data)}
    cmd = [sys.executable, "-m", "cli", "lost", "--json", "--limit", "500"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True)
    items = json.loads(out.stdout)["items"]
    assert isinstance(items, list)
    return items


def test_no_tree_is_missing_after_a_kill_9_of_the_watcher_mid_soak(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    db_url, data = f"sqlite:///{tmp_path / 'store.db'}", tmp_path / "data"
    engine = make_engine(db_url)
    upgrade(engine)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    flags = ("--settle", "1")
    a = watch_process(opencode.url, db_url, data, logs[0], *flags, lease=LEASE_S)
    b: subprocess.Popen[bytes] | None = None
    killed: list[float] = []

    def kill() -> None:
        os.kill(a.pid, signal.SIGKILL)
        killed.append(time.monotonic())

    driver = Dispatcher(opencode.url, fake_llm, KILL_AT, kill)
    try:
        wait_for(lambda: f":{a.pid}:" in holder(engine), timeout=60)
        driver.thread.start()
        # the kill lands the instant the dispatcher's tree number KILL_AT goes busy: no new tree
        # starts until the second watcher is up, the one under way goes on and is deleted
        assert driver.killed.wait(90), "the dispatcher never reached the tree to kill at"
        killed_at = killed[0]
        a.wait(10)
        at_kill = _board(engine)  # what the dead one left for the next
        b = watch_process(opencode.url, db_url, data, logs[1], *flags, lease=LEASE_S)
        # reading the server's events (standing by, or on a machine slow enough past the dead
        # one's lease already): no tree the dispatcher starts from here on goes unseen
        wait_for(lambda: "reading the events of" in logs[1].read_text(), 60, 0.1)
        standing_at = time.monotonic()
        driver.go.set()
        wait_for(lambda: f":{b.pid}:" in holder(engine), timeout=LEASE_S * 4, step=0.2)
        took_at = time.monotonic()
        in_gap = [r for r, at in list(driver.deleted.items()) if killed_at < at <= took_at]
        wait_for(lambda: driver.done_after(took_at) >= KILL_AT, timeout=60)  # trees under the second
        driver.stop.set()
        driver.thread.join(60)
        assert not driver.thread.is_alive(), "the dispatcher did not stop"
        assert not driver.errors, driver.errors
        # no tree ended while nobody held the lease: the soak would prove nothing
        assert in_gap, f"no tree deleted in the {took_at - killed_at:.1f} s gap"

        def unaccounted() -> set[str]:
            with session_scope(engine, write=False) as db:
                indexed = set(db.exec(select(SessionIndex.root_session_id)).all())
                lost = set(db.exec(select(LostTree.root_session_id)).all())
            return set(driver.roots) - indexed - lost

        # the second settles (archives from its mirror); a bound, not a timing assertion
        with_deadline = time.monotonic() + 30
        while unaccounted() and time.monotonic() < with_deadline:
            time.sleep(0.5)
        assert stop_watch(b) == 0
        archived = _archived(engine)
        lost = _lost(db_url, data)
        folder = Settings(data_dir=data, _env_file=None).archives  # type: ignore[call-arg]
        for root in set(driver.roots) & set(archived):  # each archive reads back valid
            for row in archived[root]:
                path = Path(row.archive_path)
                check_archive(read_archive(path if path.is_absolute() else folder / path))
        lost_by_root = {str(x["root_session_id"]): str(x["reason"]) for x in lost}
        created = set(driver.roots)
        full = (created & set(archived)) - set(lost_by_root)
        in_lost = Counter(r for k, r in lost_by_root.items() if k in created)
        missing = created - set(archived) - set(lost_by_root)
        with_children = {r for r in created & set(archived) if len(archived[r]) > 1}
        under_way = driver.roots[KILL_AT]
        fate = lost_by_root.get(under_way) or ("archived" if under_way in archived else "missing")
        print(
            f"\nsoak: created {len(created)} (nested {len(driver.nested)}), archived in full {len(full)}"
            f" (with children {len(with_children)}), in lost {dict(in_lost)}, missing {len(missing)};"
            f" {len(in_gap)} deleted in the {took_at - killed_at:.1f} s gap"
            f" (the second read events {standing_at - killed_at:.1f} s after the kill);"
            f" the tree under way at the kill: {fate}"
        )
        last = max(at_kill.values(), default=0.0)
        said = ", ".join(
            f"{r} busy {driver.busy.get(r, 0) - killed_at:+.3f} s, deleted "
            f"{driver.deleted.get(r, 0) - killed_at:+.3f} s after the kill, "
            f"{'on' if r in at_kill else 'not on'} the dead one's board (its last write "
            f"{last - driver.wall.get(r, 0):+.3f} s after the tree went busy)"
            for r in missing
        )
        assert not missing, f"{len(missing)} of {len(created)} trees neither archived nor lost: {said}"
        assert set(in_lost) <= set(LOST_REASONS), in_lost
        assert with_children, "no tree with a subagent was archived"
        for log in logs:
            assert "Traceback" not in log.read_text(), log.name
    except AssertionError as exc:
        said = "\n".join(f"--- {p.name}\n{p.read_text()[-4000:]}" for p in logs if p.exists())
        raise AssertionError(f"{exc}\n{said}") from None
    finally:
        driver.stop.set()
        for p in (a, b):
            if p is not None:
                stop_watch(p)
        engine.dispose()
