"""Soak: a real `opencode serve`, a dispatcher that keeps starting trees (some with a subagent)
and deletes each root the instant it goes idle, and an `octel watch` that is `kill -9`ed mid-way
while a second one starts at once, under the dead one's lease. Every tree the dispatcher made is
either archived (indexed, its archive read back valid) or in `octel lost` with a reason: none is
missing, trees that ended in the gap included."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
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

pytestmark = [pytest.mark.opencode]

LEASE_S = 6.0
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
    While ``go`` is clear it starts no new tree (the one under way, ``current``, goes on) and
    says so by setting ``paused``."""

    def __init__(self, url: str, llm: FakeLLM) -> None:
        self.url, self.llm = url, llm
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
                self.current = root

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


def _on_board(engine: Engine, root: str | None) -> bool:
    """The first watcher wrote ``root`` down as a live row."""
    if root is None:
        return False
    with session_scope(engine, write=False) as db:
        return db.exec(select(LiveSession).where(col(LiveSession.session_id) == root)).first() is not None


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
    driver = Dispatcher(opencode.url, fake_llm)
    try:
        wait_for(lambda: f":{a.pid}:" in holder(engine), timeout=60)
        driver.thread.start()
        began = time.monotonic()
        wait_for(lambda: driver.done_after(began) >= 5, timeout=60)  # trees under the first
        # a tree born and deleted while no watcher has written it down is seen by nobody: no new
        # tree starts until the second is up, and the one under way goes on through the kill
        # once it is on the first one's live board (the store is all the second learns from)
        driver.paused.clear()
        driver.go.clear()
        wait_for(lambda: driver.paused.is_set() or _on_board(engine, driver.current), 30, 0.05)
        os.kill(a.pid, signal.SIGKILL)
        killed_at = time.monotonic()
        a.wait(10)
        b = watch_process(opencode.url, db_url, data, logs[1], *flags, lease=LEASE_S)
        # up: standing by, or (on a machine slow enough) past the dead one's lease already
        wait_for(lambda: any(w in logs[1].read_text() for w in ("standing by", " over from ")), 60, 0.1)
        standing_at = time.monotonic()
        driver.go.set()
        wait_for(lambda: f":{b.pid}:" in holder(engine), timeout=LEASE_S * 4, step=0.2)
        took_at = time.monotonic()
        in_gap = [r for r, at in list(driver.deleted.items()) if killed_at < at <= took_at]
        wait_for(lambda: driver.done_after(took_at) >= 5, timeout=60)  # trees under the second
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
        print(
            f"\nsoak: created {len(created)} (nested {len(driver.nested)}), archived in full {len(full)}"
            f" (with children {len(with_children)}), in lost {dict(in_lost)}, missing {len(missing)};"
            f" {len(in_gap)} deleted in the {took_at - killed_at:.1f} s gap"
            f" (the second stood by {standing_at - killed_at:.1f} s after the kill)"
        )
        said = ", ".join(
            f"{r} busy {driver.busy.get(r, 0) - killed_at:+.1f} s, deleted "
            f"{driver.deleted.get(r, 0) - killed_at:+.1f} s after the kill"
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
