"""A fleet day through one watcher: does its work per event stay flat as trees pile up?

Replays TREES session trees (default 48,000: 2,000 an hour for 24 hours) into one `Watcher`
on a simulated clock, as fast as the CPU allows. Each tree is a root and one subagent, busy
for a couple of minutes, with the events OpenCode sends for it (created, status, messages and
parts, idle). The watcher ticks every TICK simulated seconds (archiving what went quiet,
forgetting what it archived six hours ago), exactly as `octel watch` does.

Measured in CPU time of this process:
- CPU per event in the first simulated hour and in the last (events and ticks together): the
  ratio must stay within 1.2 (target), however many trees went before; and each hour's figure,
  to see that it is flat once trees start to expire (the first hour holds the fewest trees,
  so it is the cheapest; a shared machine moves single hours by 10-15%);
- idle CPU: the watcher loop holding the day's state, no traffic, for IDLE wall seconds
  (target: under 1% of a core);
- memory: sessions held and the process's resident set at hours 1, 6, 12 and 24 (flat once
  trees expire after six hours).

    python benchmarks/bench_watch.py [--trees 48000] [--per-hour 2000] [--tick 0.5] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
import statistics
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson

from archiver.client import OpenCodeClient
from tower.watch import WatchConfig, Watcher

RATIO_TARGET = 1.2
IDLE_TARGET = 0.01
T0 = 1_800_000_000.0


def _rss_mb() -> float:
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _ev(kind: str, sid: str, **props: Any) -> bytes:
    return orjson.dumps({"type": kind, "properties": {"sessionID": sid, **props}})


def tree_events(i: int, start: float) -> list[tuple[float, bytes]]:
    """The events of tree ``i`` (a root and one child), at simulated times from ``start``."""
    root, child = f"ses_r{i:07d}", f"ses_c{i:07d}"
    out: list[tuple[float, bytes]] = [
        (start, _ev("session.created", root, info={"id": root, "title": f"run {i}"})),
        (start + 0.2, _ev("session.status", root, status={"type": "busy"})),
    ]
    t = start + 1.0
    for step in range(6):
        msg = f"msg_{i:07d}_{step}"
        out.append((t, _ev("message.updated", root, info={"id": msg, "role": "assistant"})))
        for p in range(3):
            part = {"id": f"prt_{i}_{step}_{p}", "messageID": msg, "type": "text", "text": "x" * 40}
            out.append((t + 0.1 * p, _ev("message.part.updated", root, part=part)))
        t += 8.0
        if step == 2:
            out.append((t, _ev("session.created", child, info={"id": child, "parentID": root})))
            out.append((t + 0.1, _ev("session.status", child, status={"type": "busy"})))
            for k in range(4):
                part = {"id": f"prt_c{i}_{k}", "messageID": f"msg_c{i}", "type": "text", "text": "y"}
                out.append((t + 1 + k, _ev("message.part.updated", child, part=part)))
            out.append((t + 6, _ev("session.idle", child)))
            t += 8.0
    out.append((t, _ev("session.idle", root)))
    return sorted(out, key=lambda e: e[0])


class _Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


async def _no_archive(_root: str, _status: Any, _perms: Any) -> None:
    return None


async def _no_store(_batch: Any) -> None:
    return None  # the watcher still picks each session's messages so far; the store is not timed


async def replay(trees: int, per_hour: int, tick: float) -> dict[str, Any]:
    clock = _Clock()
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda r: httpx.Response(404))) as http:
        w = Watcher(
            OpenCodeClient(http, "http://oc"),
            http,
            _no_archive,
            config=WatchConfig(settle_seconds=2.0),
            on_messages=_no_store,
            clock=clock,
        )
        gap = 3600.0 / per_hour
        hours = int(trees / per_hour + 0.999)
        cpu = [0.0] * (hours + 1)
        events = [0] * (hours + 1)
        held: dict[int, tuple[int, float]] = {}
        pending: list[list[tuple[float, bytes]]] = []
        started = 0
        end = T0 + trees * gap + 600.0
        while clock.now < end:
            hour = min(int((clock.now - T0) // 3600), hours)
            while started < trees and T0 + started * gap <= clock.now:
                pending.append(tree_events(started, T0 + started * gap))
                started += 1
            c0 = time.process_time()
            n = 0
            still = []
            for evs in pending:
                k = 0
                while k < len(evs) and evs[k][0] <= clock.now:
                    w._event(evs[k][1].decode())
                    k += 1
                n += k
                if k < len(evs):
                    still.append(evs[k:] if k else evs)
            pending = still
            await w.step()
            cpu[hour] += time.process_time() - c0
            events[hour] += n
            mark = hour + 1
            if mark in (1, 6, 12, 24) and mark not in held and clock.now - T0 >= mark * 3600 - tick:
                held[mark] = (w.rec.size(), round(_rss_mb(), 1))
            clock.now += tick
        per_hour = [round(c / max(e, 1) * 1e6, 2) for c, e in zip(cpu[:hours], events[:hours], strict=True)]
        first = cpu[0] / max(events[0], 1)
        last_h = hours - 1
        last = cpu[last_h] / max(events[last_h], 1)
        held_end = w.rec.size()
        idle = await _idle(w, http)
    return {
        "trees": trees,
        "hours": hours,
        "events": sum(events),
        "archives": w.archives,
        "held_sessions_at_end": held_end,
        "cpu_us_per_event_first_hour": round(first * 1e6, 2),
        "cpu_us_per_event_last_hour": round(last * 1e6, 2),
        "ratio_last_to_first": round(last / first, 3) if first else None,
        "idle_cpu_share_of_core": idle,
        "held_sessions_and_rss_mb_by_hour": held,
        "cpu_s_total": round(sum(cpu), 1),
        "cpu_us_per_event_by_hour": per_hour,
        # once the first trees expire (6 h), the held state stops growing: is the cost flat?
        "ratio_last_to_median_after_6h": (
            round(last / (statistics.median(per_hour[6:]) / 1e6), 3) if len(per_hour) > 7 else None
        ),
    }


async def _idle(w: Watcher, http: httpx.AsyncClient, seconds: float = 5.0) -> float:
    """CPU share of the real watch loop (0.5 s ticks, an open but silent /event stream)."""

    async def silent() -> AsyncIterator[bytes]:
        await asyncio.sleep(3600)
        yield b""

    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/event":
            return httpx.Response(200, stream=silent())  # type: ignore[arg-type]
        if req.url.path == "/session/status":
            return httpx.Response(200, json={})
        if req.url.path == "/session":
            return httpx.Response(200, json=[])
        return httpx.Response(404)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as quiet:
        w.client, w.http = OpenCodeClient(quiet, "http://oc"), quiet
        stop = asyncio.Event()
        task = asyncio.create_task(w.run(stop))
        await asyncio.sleep(1.0)  # the first poll and connect
        c0, t0 = time.process_time(), time.monotonic()
        await asyncio.sleep(seconds)
        share = (time.process_time() - c0) / (time.monotonic() - t0)
        stop.set()
        await task
    return round(share, 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", type=int, default=48_000)
    ap.add_argument("--per-hour", type=int, default=2_000)
    ap.add_argument("--tick", type=float, default=0.5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out = asyncio.run(replay(a.trees, a.per_hour, a.tick))
    if a.json:
        print(json.dumps(out))
        return
    for k, v in out.items():
        print(f"{k:40} {v}")
    ratio = out["ratio_last_to_first"]
    print(
        f"\nper-event CPU, last hour / first: {ratio} (target <= {RATIO_TARGET}); "
        f"idle: {out['idle_cpu_share_of_core'] * 100:.2f}% of a core (target < {IDLE_TARGET * 100:.0f}%)"
    )


if __name__ == "__main__":
    main()
