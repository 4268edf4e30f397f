"""Budget latency: from a turn's cost arriving on the watcher's board (the turn that takes its
tree past its budget) to the abort reaching the server, with the act loop ticking every
`--tick` seconds (1 s).

The real `act_loop` runs over a live board and a real SQLite store (the spend read, the audit
claim and its outcome), against a small HTTP server on loopback that answers the re-check as
a busy session and counts the aborts. Each breach lands at a random moment between ticks, in a
tree of its own. Two modes in the same run: ``woken`` (the cost wakes the loop, as `octel
watch` does) and the baseline ``tick only`` (the loop looks once a tick). Prints, for each, the
p50 and p95 of the cost to the abort at the server, of the breach seen to the abort sent (the
audit row's times), and the p95's ratio to the tick.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import httpx
from sqlmodel import select

from archiver.redact import Redactor
from telemetry.store.action_models import WatchAction
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.tower.acting import act_loop
from telemetry.tower.budget_watch import BudgetWatch
from tower.actions import Rules
from tower.budgets import Budget
from tower.live_board import LiveBoard
from tower.watch import Watcher

ABORTS: dict[str, float] = {}


class _Server(BaseHTTPRequestHandler):
    def log_message(self, *_a: object) -> None:
        return None

    def _answer(self, body: object) -> None:
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.path == "/session/status":
            self._answer({sid: {"type": "busy"} for sid in list(_BUSY)})
        else:
            self._answer({"id": self.path.rsplit("/", 1)[-1]})

    def do_POST(self) -> None:
        ABORTS.setdefault(self.path.split("/")[2], time.time())
        self._answer(True)


_BUSY: set[str] = set()


def _p(xs: list[float], q: int) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) >= 2 else xs[0]


def _event(board: LiveBoard, sid: str, kind: str, info: dict[str, object] | None = None) -> None:
    now = time.time()
    if kind == "status":
        board.on_event({"type": "session.status", "properties": {"sessionID": sid, "status": info}}, now)
    else:
        board.on_event({"type": "message.updated", "properties": {"sessionID": sid, "info": info}}, now)


async def _run(
    url: str, data: Path, *, woken: bool, events: int, tick: float, seed: int
) -> tuple[list[float], list[float]]:
    """(cost arrived -> abort at the server, breach seen -> abort sent) of ``events`` breaches."""
    engine = make_engine(f"sqlite:///{data / ('woken' if woken else 'tick')}.db")
    upgrade(engine)
    board = LiveBoard(url, lambda s: s)
    rng = random.Random(seed)
    stop = asyncio.Event()
    budgets = BudgetWatch([Budget("tree", 0.01, warn_at=1)])
    lat: list[float] = []
    async with httpx.AsyncClient() as http:
        w = SimpleNamespace(
            client=SimpleNamespace(base_url=url, is_v2=False, http=SimpleNamespace(auth=None)),
            live=board,
            rec=SimpleNamespace(root_of=lambda s: s),
            http=http,
        )
        loop = asyncio.create_task(
            act_loop(
                cast(Watcher, w),
                Rules(),
                stop,
                engine=engine,
                redactor=Redactor(b"k" * 32, []),
                budgets=budgets,
                tick=tick,
            )
        )
        await asyncio.sleep(0.2)
        if not woken:
            board.on_spend = None  # the baseline: the loop looks once a tick
        for i in range(events):
            sid = f"ses_{'w' if woken else 't'}{i:04d}"
            _event(
                board,
                sid,
                "msg",
                {"id": f"msg_{sid}_0", "sessionID": sid, "role": "user", "time": {"created": 1}},
            )
            _event(board, sid, "status", {"type": "busy"})
            board.snapshot(time.time())
            _BUSY.add(sid)
            await asyncio.sleep(rng.uniform(0, tick))
            info = {
                "id": f"msg_{sid}_1",
                "sessionID": sid,
                "role": "assistant",
                "cost": 0.02,
                "time": {"created": 2},
            }
            t0 = time.time()
            _event(board, sid, "msg", info)
            while sid not in ABORTS:
                await asyncio.sleep(0.005)
            lat.append(ABORTS[sid] - t0)
            _BUSY.discard(sid)
            _event(board, sid, "status", {"type": "idle"})
            board.snapshot(time.time())
        stop.set()
        await loop
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(WatchAction)))
    acted = [r.at.timestamp() - float((r.evidence or {})["seen_at"]) for r in rows]
    engine.dispose()
    return lat, acted


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--tick", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Server)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_address[1]}"
    with tempfile.TemporaryDirectory() as tmp:
        out = {}
        for woken in (False, True):
            out[woken] = asyncio.run(
                _run(url, Path(tmp), woken=woken, events=a.events, tick=a.tick, seed=a.seed)
            )
    srv.shutdown()
    print(f"{a.events} breaches per mode, act loop tick {a.tick:g} s, SQLite store, loopback server")
    for woken, (lat, acted) in out.items():
        name = "woken by the cost" if woken else "tick only (baseline)"
        print(
            f"  {name:22} cost -> abort at server p50 {_p(lat, 50):.3f} s, p95 {_p(lat, 95):.3f} s "
            f"({_p(lat, 95) / a.tick:.2f} of the tick); seen -> abort sent p50 {_p(acted, 50):.3f} s, "
            f"p95 {_p(acted, 95):.3f} s ({_p(acted, 95) / a.tick:.3f} of the tick)"
        )
    base, new = _p(out[False][0], 95), _p(out[True][0], 95)
    print(f"  p95 cost -> abort: {new / base:.3f} of the baseline's (x{base / new:.1f} sooner)")


if __name__ == "__main__":
    main()
