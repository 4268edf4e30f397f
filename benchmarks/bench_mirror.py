"""The watcher's mirror of /event: its memory, its spill files, and the delete race it wins.

1. Memory: TREES copies of a real captured subagent tree (tests/fixtures/opencode), ids made
   unique, their events interleaved as if all were in flight at once, folded into one
   `Mirror` with no spill. Peak memory traced while folding (tracemalloc), against the JSON
   bytes of those trees as the server gives them (session records and messages, what their
   archives hold): target under 2x.
2. Spill: the same events with a budget of a tenth of those bytes: every session read back
   from its file must equal the in-memory fold; the peak, against the budget.
3. The delete race (with --race N, needs opencode: OCTEL_OPENCODE_NPM_DIR or the test cache):
   a real `opencode serve` and the scripted fake LLM, a watcher with the default settle delay,
   and a dispatcher that deletes each root (with its subagent) the instant it goes idle.
   Counted: trees archived complete (every session, every message of the script, no walk
   error); first with the mirror's rescue turned off (the baseline: the settle archive alone),
   then with it.

    python benchmarks/bench_mirror.py [--trees 200] [--race 100] [--baseline 10] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "e2e"), str(ROOT / "tests")]

from tower.mirror import Mirror  # noqa: E402

CAPTURE = ROOT / "tests" / "fixtures" / "opencode" / "subagent_tree.json"
MEMORY_TARGET = 2.0
SCRIPT = {
    "title": "Deleted at idle",
    "turns": [
        {
            "text": "Delegating.",
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "description": "Look around",
                        "prompt": "Say hello.",
                        "subagent_type": "general",
                    },
                }
            ],
        },
        {"text": "Hello from the child.", "reasoning": "The parent asked for a greeting."},
        {"text": "All done."},
    ],
}


def _trees(n: int) -> tuple[list[bytes], dict[str, bytes]]:
    """Events of ``n`` copies of the capture, interleaved in order per tree, and each
    session's export (JSON bytes) under its new id."""
    d = orjson.loads(CAPTURE.read_bytes())
    raw = orjson.dumps([e["event"] for e in d["events"]]).decode()
    # a tree's bytes: what its archive holds of the server's answers, records and messages
    export = orjson.dumps(
        {x["id"]: {"session": x, "messages": d["messages"][x["id"]]} for x in d["sessions"]}
    ).decode()
    ids = sorted({*d["messages"]}, key=len, reverse=True)
    streams, exports = [], {}
    for i in range(n):
        ev, ex = raw, export
        for sid in ids:  # a distinct id per tree, same length, so sizes do not drift
            new = sid[:-6] + f"{i:06d}"
            ev, ex = ev.replace(sid, new), ex.replace(sid, new)
        ev = ev.replace('"evt_', f'"evt_{i:06d}')  # event ids stay ascending within a tree
        streams.append([orjson.dumps(e) for e in orjson.loads(ev)])
        exports.update({s: orjson.dumps(m) for s, m in orjson.loads(ex).items()})
    rnd = random.Random(7)
    out: list[bytes] = []
    cursors = [0] * n
    live = list(range(n))
    while live:  # every tree in flight at once: one event of a random tree at a time
        i = rnd.choice(live)
        out.append(streams[i][cursors[i]])
        cursors[i] += 1
        if cursors[i] == len(streams[i]):
            live.remove(i)
    return out, exports


def _fold(events: list[bytes], mirror: Mirror) -> int:
    tracemalloc.start()
    for b in events:
        mirror.on_event(orjson.loads(b), 1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def memory(n: int) -> dict[str, Any]:
    events, exports = _trees(n)
    held = sum(len(v) for v in exports.values())
    m = Mirror()
    peak = _fold(events, m)
    same = all(m.session(s).messages() == orjson.loads(v)["messages"] for s, v in exports.items())  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        budget = held // 10
        spilled = Mirror(Path(tmp), budget_bytes=budget)
        speak = _fold(events, spilled)
        back = all(
            orjson.dumps(spilled.session(s).messages()) == orjson.dumps(m.session(s).messages())  # type: ignore[union-attr]
            for s in exports
        )
        files = len(list(Path(tmp).iterdir()))
    return {
        "trees": n,
        "events": len(events),
        "tree_bytes": held,
        "peak_bytes": peak,
        "ratio": round(peak / held, 2),
        "target": MEMORY_TARGET,
        "same_messages_as_export": same,
        "spill_budget_bytes": budget,
        "spill_peak_bytes": speak,
        "spill_files": files,
        "spill_peak_over_tree_bytes": round(speak / held, 2),
        "spilled_read_back_identical": back,
    }


def race(n: int, rescue: bool, opencode: Any, llm: Any, work: Path) -> dict[str, Any]:
    from dispatcher import run_and_delete_at_idle

    from archiver.files import find_archives, read_archive
    from telemetry.archiving import watch_server
    from telemetry.settings import Settings
    from telemetry.store.db import make_engine
    from telemetry.store.migrate import upgrade
    from tower.watch import WatchConfig

    settings = Settings(data_dir=work, _env_file=None)  # type: ignore[call-arg]
    engine = make_engine(settings.db_url)
    upgrade(engine)
    stop, loop, logs = asyncio.Event(), asyncio.new_event_loop(), []
    cfg = WatchConfig(settle_seconds=2.0, poll_interval=0.5)

    async def go() -> None:
        w = watch_server(settings, stop, engine=engine, server_url=opencode.url, config=cfg, log=logs.append)
        task = asyncio.ensure_future(w)
        await asyncio.sleep(0)
        await task

    due = Mirror.due
    if not rescue:  # the baseline: what the settle archive alone keeps
        Mirror.due = lambda self, now, grace=0.5: []  # type: ignore[method-assign]
    thread = threading.Thread(target=loop.run_until_complete, args=(go(),), daemon=True)
    thread.start()
    time.sleep(1.0)
    roots, t0 = [], time.monotonic()
    try:
        for _ in range(n):
            llm.load(SCRIPT)
            roots.append(run_and_delete_at_idle(opencode.url, "Look at the project.")["root"])
        time.sleep(cfg.settle_seconds + 3.0)  # every archive that would happen has happened
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        loop.close()
        Mirror.due = due  # type: ignore[method-assign]
    docs: dict[str, list[dict[str, Any]]] = {}
    for d in map(read_archive, find_archives(settings.archives)):
        docs.setdefault(d["root_session_id"], []).append(d)
    complete = 0
    for r in roots:
        tree = docs.get(r, [])
        by_depth = {d["depth"]: len(d["messages"]) for d in tree}
        if len(tree) == 2 and by_depth == {0: 3, 1: 2} and all(not d["walk_errors"] for d in tree):
            complete += 1
    engine.dispose()
    origins = sorted({d["source"].get("origin", "server") for t in docs.values() for d in t})
    return {
        "trees": n,
        "archived_complete": complete,
        "origins": origins,
        "seconds_per_tree": round((time.monotonic() - t0) / max(n, 1), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--race", type=int, default=0, help="trees deleted at idle on a real server")
    ap.add_argument("--baseline", type=int, default=10, help="of those, run first without the rescue")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict[str, Any] = {"memory": memory(a.trees)}
    if a.race:
        from fakellm import FakeLLM
        from opencode_harness import find_or_install, opencode_server

        binary, why = find_or_install()
        if binary is None:
            raise SystemExit(f"opencode is needed for --race: {why}")
        llm = FakeLLM().start()
        with tempfile.TemporaryDirectory() as tmp, opencode_server(binary, Path(tmp) / "oc", llm.url) as oc:
            if a.baseline:
                out["race_without_rescue"] = race(a.baseline, False, oc, llm, Path(tmp) / "base")
            out["race"] = race(a.race, True, oc, llm, Path(tmp) / "data")
        llm.stop()
    print(json.dumps(out, indent=None if a.json else 2))


if __name__ == "__main__":
    main()
