"""A watcher killed with `kill -9` between an abort request and its answer, on a real
`opencode serve` behind a proxy that holds that request (a server that lags: the session goes
on retrying). The audit already holds the intent, ``sending``, written before the request
left; the watcher that takes the lease over reports it ``unknown`` with what the server shows,
and does not send the abort a second time, though the rule would have it sent."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest
from driver import start, wait_for
from fakellm import FakeLLM
from holding_proxy import HoldingProxy
from opencode_harness import OpenCode
from realparts import free_port
from sqlalchemy.engine import Engine
from sqlmodel import select
from watch_process import holder, stop_watch, watch_process

from telemetry.store.action_models import WatchAction
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade

pytestmark = [pytest.mark.opencode]

LEASE_S = 6.0
FLAGS = ("--abort-retries-after", "2", "--settle", "600")


def _rows(engine: Engine, root: str) -> list[WatchAction]:
    with session_scope(engine, write=False) as db:
        return list(db.exec(select(WatchAction).where(WatchAction.session_id == root)))


def test_an_abort_whose_watcher_died_mid_request_is_on_record_and_not_sent_again(
    opencode: OpenCode, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    overloaded = {"http_error": 529, "message": "Overloaded"}
    fake_llm.load({"title": "Retry", "turns": [overloaded] * 40})
    db_url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = make_engine(db_url)
    upgrade(engine)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    procs: list[subprocess.Popen[bytes]] = []
    http = httpx.Client(base_url=opencode.url, timeout=15)
    root = ""
    with HoldingProxy(opencode.url, free_port()).running() as proxy:
        try:
            procs.append(watch_process(proxy.url, db_url, tmp_path / "data", logs[0], *FLAGS, lease=LEASE_S))
            wait_for(lambda: f":{procs[0].pid}:" in holder(engine), timeout=60)
            procs.append(watch_process(proxy.url, db_url, tmp_path / "data", logs[1], *FLAGS, lease=LEASE_S))
            wait_for(lambda: "standing by" in logs[1].read_text(), timeout=60)
            root = start(http, "Say something.", {"title": "retrying"})
            assert proxy.held.wait(90), "no abort was sent"
            os.kill(procs[0].pid, signal.SIGKILL)  # between the request and its answer
            procs[0].wait(10)
            # what the dead watcher did is on record: the intent, written before the request
            (row,) = _rows(engine, root)
            assert (row.rule, row.action, row.outcome) == ("abort_retries_after", "abort", "sending")
            assert f":{procs[0].pid}:" in str(row.watcher) and row.intent_key
            assert http.get("/session/status").json()[root]["type"] == "retry"  # the abort never reached it
            wait_for(lambda: f":{procs[1].pid}:" in holder(engine), timeout=LEASE_S * 4, step=0.2)
            (row,) = wait_for(lambda: [r for r in _rows(engine, root) if r.outcome == "unknown"], timeout=30)
            assert row.detail.startswith("watcher died while sending")
            assert "still shows it due; not sent again" in row.detail
            # the new holder's rule wants the abort too (the session still retries), and refrains
            wait_for(lambda: "on record already (unknown); not sent again" in logs[1].read_text(), timeout=30)
            procs[1].send_signal(signal.SIGTERM)
            procs[1].wait(30)
            assert http.get("/session/status").json().get(root, {}).get("type") == "retry"
            assert proxy.aborts == [f"/session/{root}/abort"]  # once: the new holder did not send it
            assert len(_rows(engine, root)) == 1
        except AssertionError as exc:
            said = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
            raise AssertionError(f"{exc}\n{said}") from None
        finally:
            for p in procs:
                stop_watch(p)
            if root:
                http.post(f"/session/{root}/abort")
            http.close()
            engine.dispose()
