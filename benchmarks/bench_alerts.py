"""Alert latency: from the event (a live stuck finding appearing on the watcher's board) to the
alert's arrival at the receiver, with the watcher ticking every `--tick` seconds (2 s).

A loop does what `octel watch`'s act loop does once a tick (the views of the board in, the
`LiveAlerts` of the tick emitted to the sink); the events land at random moments between ticks
in sessions of their own. The sink is the real `QueueSink` with its `Deliverer` thread and a
real HTTP receiver on loopback: the webhook directly, and, when `prometheus-alertmanager` is
installed, through a real Alertmanager (`group_wait` 0 s) to its webhook. The baseline, in the
same run, is one POST of the same payload from the moment of the event (no tick, no queue).
The webhook runs twice: with no store, and with each delivery claimed in a SQLite store first
(`telemetry.alert_claim`, as `octel watch` does: one read and one write per alert). Prints p50
and p95 of each, and their ratio to the baseline.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from alert_receiver import Receiver

from archiver.redact import Redactor
from telemetry.alert_claim import claim_alerts
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade
from tower.actions import Rules, SessionView
from tower.alert import Alert
from tower.alert_delivery import AlertmanagerChannel, Channel, Claim, Deliverer, QueueSink, WebhookChannel
from tower.live_alerts import LiveAlerts

RULES = Rules(on_stuck=(("doom_loop", "notify"),))
STUCK = ({"detector": "doom_loop", "verdict": "stuck", "score": 1.0, "summary": "same call"},)


def _p(xs: list[float], q: float) -> float:
    return statistics.quantiles(xs, n=100)[q - 1] if len(xs) >= 2 else xs[0]


def run(
    ch: Channel,
    rx: Receiver,
    *,
    alertmanager: bool,
    events: int,
    tick: float,
    seed: int,
    claim: Claim | None = None,
) -> list[float]:
    """Latencies (s) of ``events`` stuck findings, each from its event to ``rx``."""
    rng = random.Random(seed)
    sink = QueueSink()
    deliverer = Deliverer(sink, [ch], lambda _d, _n: None, claim=claim).start()
    stuck_at: dict[str, float] = {}
    lock, stop = threading.Lock(), threading.Event()

    def watcher() -> None:  # the act loop's alert step, once a tick
        alerts = LiveAlerts(RULES, str)
        while not stop.is_set():
            with lock:
                views = [SessionView(sid, "busy", root_session_id=sid, findings=STUCK) for sid in stuck_at]
            for a in alerts.tick(views):
                sink.emit(a)
            stop.wait(tick)

    threading.Thread(target=watcher, daemon=True).start()
    for i in range(events):
        time.sleep(rng.uniform(0.2, 1.2))
        with lock:
            stuck_at[f"ses_{seed}_{i}"] = time.time()
    rx.wait(lambda ps: _seen(ps, alertmanager) >= set(stuck_at), timeout=60 + tick * 2)
    stop.set()
    deliverer.close()
    got = _arrivals(rx.posts, alertmanager)
    return [got[sid] - at for sid, at in stuck_at.items()]


def _sessions(body: object, alertmanager: bool) -> list[str]:
    assert isinstance(body, dict)
    if alertmanager:
        return [a["labels"]["session"] for a in body["alerts"]]
    return [a["session_id"] for a in body["alerts"]]


def _seen(posts: list, alertmanager: bool) -> set[str]:  # type: ignore[type-arg]
    return {s for p in posts for s in _sessions(p.json(), alertmanager)}


def _arrivals(posts: list, alertmanager: bool) -> dict[str, float]:  # type: ignore[type-arg]
    out: dict[str, float] = {}
    for p in posts:
        for s in _sessions(p.json(), alertmanager):
            out.setdefault(s, p.at)
    return out


def baseline(events: int) -> list[float]:
    with Receiver() as rx, httpx.Client() as http:
        out = []
        for i in range(events):
            t0 = time.time()
            http.post(rx.url, json={"alerts": [{"session_id": f"b{i}"}]})
            out.append(rx.posts[-1].at - t0)
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=20)
    ap.add_argument("--tick", type=float, default=2.0)
    args = ap.parse_args()
    kw = {"events": args.events, "tick": args.tick}
    rows = {"baseline (one POST at the event)": baseline(args.events)}
    with Receiver() as rx:
        ch = WebhookChannel(rx.url, "", fmt="json", secret=b"s")
        rows[f"webhook, {args.tick:g} s tick"] = run(ch, rx, alertmanager=False, seed=1, **kw)
    with Receiver() as rx, tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'octel.db'}")
        upgrade(engine)
        red = Redactor(b"k" * 32, [])

        def claim(alerts: Sequence[Alert], now: float) -> dict[str, int]:
            return claim_alerts(engine, alerts, now, channel="webhook_json", repeat_s=300, redactor=red)

        ch = WebhookChannel(rx.url, "", fmt="json", secret=b"s")
        name = f"webhook, claimed in SQLite, {args.tick:g} s tick"
        rows[name] = run(ch, rx, alertmanager=False, seed=1, claim=claim, **kw)
        engine.dispose()
    if shutil.which("prometheus-alertmanager") or shutil.which("alertmanager"):
        from alertmanager_harness import alertmanager

        name = f"Alertmanager -> webhook, {args.tick:g} s tick"
        with (
            Receiver() as rx,
            tempfile.TemporaryDirectory() as tmp,
            alertmanager(Path(tmp), rx.url + "/am", group_wait="0s") as am,
        ):
            rows[name] = run(AlertmanagerChannel(am, "", 300), rx, alertmanager=True, seed=2, **kw)
    else:
        print("alertmanager not installed (apt-get install prometheus-alertmanager): its row is left out")
    base = _p(rows["baseline (one POST at the event)"], 95)
    for name, xs in rows.items():
        print(
            f"{name:45s} n={len(xs):3d}  p50 {statistics.median(xs) * 1000:8.1f} ms  "
            f"p95 {_p(xs, 95) * 1000:8.1f} ms  p95/baseline {_p(xs, 95) / base:8.0f}x"
        )


if __name__ == "__main__":
    main()
