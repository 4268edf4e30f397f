"""The live view under load and how fast it shows a stuck session.

Against `fake_opencode_events.py` in its own process (so this process's CPU is the watcher's):

- load: SESSIONS busy sessions emitting RATE events a second each (default 200 x 50 = 10,000
  events/s) into one `Watcher` that writes its live rows to a SQLite store, for SECONDS. Event
  lag (processed minus sent, sampled every 50th event) p50/p95, and the watcher's CPU as a share
  of one core, and the CPU one event costs (so the cores the sent rate needs, which holds on a
  machine too busy to give the watcher what it needs). Targets: lag p95 under 1 s, CPU under one
  core.
- latency: one permission ask sent at a known moment; the time until the live row says
  `waiting_permission` in the store and until `/metrics` (the app, in process) shows it: over
  `/event` (target 2 s) and on the poll fallback with a 2 s poll (target poll interval + 1 s).

    python benchmarks/bench_live.py [--sessions 200] [--rate 50] [--seconds 20] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import select

from archiver.client import OpenCodeClient
from archiver.redact import Redactor
from telemetry.settings import Settings
from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.store.migrate import upgrade
from telemetry.tower.live import store_live_rows
from tower.live_board import LiveRow
from tower.watch import WatchConfig, Watcher
from web.app import create_app

HERE = Path(__file__).parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Timed(Watcher):
    """Samples the lag of every 50th event (its `t_emit`, read without a second parse)."""

    lags: list[float]
    _n = 0

    def _event(self, payload: str) -> None:
        super()._event(payload)
        self._n += 1
        if self._n % 50 == 0:
            i = payload.rfind('"t_emit": ')
            if i >= 0:
                self.lags.append(time.time() - float(payload[i + 10 :].split("}", 1)[0].split(",", 1)[0]))


async def _noop(*_a: Any) -> None:
    return None


def _server(port: int, *args: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen([sys.executable, str(HERE / "fake_opencode_events.py"), str(port), *args])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return p
        time.sleep(0.05)
    raise RuntimeError("the fake server did not start")


@contextlib.contextmanager
def _server_and_store(*args: str) -> Iterator[tuple[str, Path, Engine]]:
    """The fake OpenCode server (started with ``args``) and a migrated SQLite store in a
    temporary folder: the server's URL, the folder and the store; both stopped on exit."""
    port = _port()
    proc = _server(port, *args)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'octel.db'}")
        try:
            upgrade(engine)
            yield f"http://127.0.0.1:{port}", Path(tmp), engine
        finally:
            proc.terminate()
            proc.wait(10)
            engine.dispose()


def _watcher(http: httpx.AsyncClient, url: str, engine: Any, poll: float) -> _Timed:
    redactor = Redactor(b"k" * 32, [])

    async def on_live(rows: list[LiveRow]) -> None:
        with session_scope(engine) as db:
            store_live_rows(db, rows, redactor=redactor)

    w = _Timed(
        OpenCodeClient(http, url), http, _noop, config=WatchConfig(poll_interval=poll), on_live=on_live
    )
    w.lags = []
    return w


async def load(sessions: int, rate: float, seconds: float) -> dict[str, Any]:
    with _server_and_store("--sessions", str(sessions), "--rate", str(rate)) as (url, _, engine):
        async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0)) as http:
            w = _watcher(http, url, engine, 2.0)
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop))
            await asyncio.sleep(3.0)  # connect, first poll, first rows
            w.lags.clear()
            n0, c0, t0 = w._n, time.process_time(), time.monotonic()
            await asyncio.sleep(seconds)
            used, wall = time.process_time() - c0, time.monotonic() - t0
            events = w._n - n0
            stop.set()
            await task
    lags = sorted(w.lags)
    return {
        "sessions": sessions,
        "events_per_second_sent": sessions * rate,
        "events_processed_per_second": round(events / wall),
        "lag_p50_s": round(statistics.median(lags), 3) if lags else None,
        "lag_p95_s": round(lags[int(len(lags) * 0.95)], 3) if lags else None,
        "watcher_cpu_share_of_core": round(used / wall, 3),
        # what one event costs, whatever share of a core a busy machine leaves the watcher
        "cpu_us_per_event": round(used / events * 1e6, 1) if events else None,
        "cores_needed_for_the_rate_sent": round(used / events * sessions * rate, 3) if events else None,
    }


async def latency(events: bool, poll: float = 2.0) -> dict[str, Any]:
    args = ["--sessions", "5", "--rate", "2", "--ask-after", "4"] + ([] if events else ["--no-events"])
    out: dict[str, Any] = {"mode": "event stream" if events else f"polling every {poll:g} s"}
    with _server_and_store(*args) as (url, tmp, engine):
        settings = Settings(data_dir=tmp, _env_file=None)  # type: ignore[call-arg]
        # the app answers only the hosts it knows: TestClient's default `testserver` is one
        # only where the test suite's conftest adds it, so name a host it always answers
        with TestClient(create_app(settings), base_url="http://127.0.0.1") as app:
            async with httpx.AsyncClient(timeout=httpx.Timeout(30.0, connect=5.0)) as http:
                w = _watcher(http, url, engine, poll)
                stop = asyncio.Event()
                task = asyncio.create_task(w.run(stop))
                row_at = metrics_at = None
                deadline = time.monotonic() + 30
                while (row_at is None or metrics_at is None) and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                    if row_at is None:
                        with session_scope(engine, write=False) as db:
                            got = db.exec(
                                select(LiveSession).where(LiveSession.state == "waiting_permission")
                            )
                            row = got.first()
                        if row is not None:
                            row_at, asked = time.time(), row.permission_asked_at
                    if metrics_at is None and row_at is not None:
                        resp = await asyncio.to_thread(app.get, "/metrics")
                        if resp.status_code != 200:  # say why rather than wait out the deadline
                            out["error"] = f"/metrics answered {resp.status_code}: {resp.text[:200]}"
                            break
                        text = resp.text
                        if (
                            'octel_live_sessions{server="' in text
                            and 'state="waiting_permission"} 1.0' in text
                        ):
                            metrics_at = time.time()
                stop.set()
                await task
    if "error" in out:
        return out
    if row_at is None or metrics_at is None:
        return {**out, "error": "not seen within 30 s"}
    sent = asked.timestamp() if asked is not None else float("nan")
    return {**out, "to_live_row_s": round(row_at - sent, 3), "to_metrics_s": round(metrics_at - sent, 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--rate", type=float, default=50.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = {
        "latency_events": asyncio.run(latency(True)),
        "latency_polling": asyncio.run(latency(False)),
        "load": asyncio.run(load(a.sessions, a.rate, a.seconds)),
    }
    print(json.dumps(out, indent=None if a.json else 2))


if __name__ == "__main__":
    main()
