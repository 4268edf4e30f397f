"""The watch recorder on captured event streams, and the watch loop on a polling-only server."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import httpx
import orjson
from archiver_fakes import FakeOpenCode, session, tree
from hypothesis import given
from hypothesis import strategies as st

from archiver.client import OpenCodeClient
from archiver.recorder import Recorder
from tower.watch import WatchConfig, Watcher

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode"


def _replay(name: str) -> tuple[Recorder, dict[str, Any]]:
    fx = orjson.loads((FIXTURES / f"{name}.json").read_bytes())
    rec = Recorder()
    for e in fx["events"]:
        rec.on_event(e["event"], e["received"] / 1000.0)
    return rec, fx


def test_retry_history_is_recorded() -> None:
    rec, fx = _replay("retry_cascade")
    hist = rec.status[fx["root_id"]]
    retries = [h for h in hist if h["type"] == "retry"]
    assert [h["attempt"] for h in retries] == [1, 2, 3]
    assert all(h["next"] and h["message"] for h in retries)
    assert hist[0]["type"] == "busy" and hist[-1]["type"] == "idle"


def test_idle_twice_after_abort_is_recorded_once() -> None:
    rec, fx = _replay("aborted")
    types = [h["type"] for h in rec.status[fx["root_id"]]]
    assert types[-1] == "idle" and types.count("idle") == 1


def test_permission_asks_and_replies_are_kept() -> None:
    rec, fx = _replay("doom_loop_guard")
    kinds = [e["event"]["type"] for e in rec.permissions[fx["root_id"]]]
    assert kinds.count("permission.asked") == 2 and kinds.count("permission.replied") == 2


def test_tree_membership_and_due_after_settle() -> None:
    rec, fx = _replay("subagent_tree")
    root = fx["root_id"]
    assert set(rec.tree(root)) == {s["id"] for s in fx["sessions"]}
    last = max(e["received"] for e in fx["events"]) / 1000.0
    assert rec.due(last + 0.5, settle=2.0) == []
    assert rec.due(last + 3.0, settle=2.0) == [root]
    rec.mark_archived(root, last + 3.0)
    assert rec.due(last + 10.0, settle=2.0) == []
    rec.on_event({"type": "message.updated", "properties": {"sessionID": root}}, last + 11.0)
    assert rec.due(last + 14.0, settle=2.0) == [root]
    status, _ = rec.history(root)
    assert set(status) == {s["id"] for s in fx["sessions"]}


def test_busy_tree_is_not_due() -> None:
    rec, fx = _replay("permission_deadlock")
    root = fx["root_id"]
    midrun = Recorder()
    for e in fx["events"]:
        if e["event"]["type"] == "permission.asked":
            break
        midrun.on_event(e["event"], e["received"] / 1000.0)
    assert root in midrun.busy_roots() and midrun.due(1e13, settle=0.0) == []
    assert rec.permissions[root][0]["event"]["type"] == "permission.asked"


@given(st.lists(st.tuples(st.sampled_from(["busy", "retry", "idle"]), st.integers(1, 3)), max_size=30))
def test_status_history_never_repeats_itself(seq: list[tuple[str, int]]) -> None:
    rec = Recorder()
    for i, (kind, attempt) in enumerate(seq):
        rec.on_status_poll({"s": {"type": kind, "attempt": attempt}} if kind != "idle" else {}, float(i))
    hist = rec.status.get("s", [])
    strip = [{k: v for k, v in h.items() if k != "t"} for h in hist]
    assert all(a != b for a, b in itertools.pairwise(strip))
    assert [h["t"] for h in hist] == sorted(h["t"] for h in hist)


def test_watcher_polls_when_events_are_unavailable_and_archives_quiet_trees() -> None:
    fake = tree([1])
    fake.add(session("ses_new", cost=0.1, tokens=3))
    busy = {"ses_root": {"type": "busy"}}
    archived: list[tuple[str, dict[str, Any]]] = []
    orig = fake.handle

    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/session/status":
            return httpx.Response(200, json=busy)
        return orig(req)

    fake.handle = handle  # type: ignore[method-assign]

    async def on_archive(root: str, status: Any, perms: Any) -> None:
        archived.append((root, status))

    async def go() -> Watcher:
        async with httpx.AsyncClient(transport=httpx.MockTransport(fake.handle)) as http:
            w = Watcher(
                OpenCodeClient(http, "http://oc"),
                http,
                on_archive,
                config=WatchConfig(
                    settle_seconds=0.0, poll_interval=0.05, sse_retry_seconds=60, archive_existing=True
                ),
            )
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop, tick=0.05))
            await asyncio.sleep(0.5)
            assert [r for r, _ in archived] == ["ses_new"], "busy trees wait"
            busy.clear()
            await asyncio.sleep(0.5)
            stop.set()
            await task
            return w

    w = asyncio.run(go())
    assert w.mode == "polling"
    assert sorted(r for r, _ in archived) == ["ses_new", "ses_root"]
    root_status = dict(archived)["ses_root"]["ses_root"]
    assert [h["type"] for h in root_status] == ["busy", "idle"]


def test_watcher_probes_long_runs_and_aborts_when_asked() -> None:
    fake = FakeOpenCode()
    fake.add(session("ses_loop", cost=1.0, tokens=10), 0)
    call = {
        "type": "tool",
        "tool": "bash",
        "callID": "c",
        "state": {
            "status": "completed",
            "input": {"command": "ls"},
            "output": "x",
            "metadata": {"exit": 0},
            "title": "ls",
            "time": {"start": 1, "end": 2},
        },
    }
    fake.messages["ses_loop"] = [
        {
            "info": {
                "id": f"msg_{i:04d}",
                "sessionID": "ses_loop",
                "role": "assistant",
                "time": {"created": i, "completed": i + 1},
            },
            "parts": [{**call, "id": f"prt_{i}"}],
        }
        for i in range(12)
    ]
    aborted: list[str] = []
    found: list[str] = []
    orig = fake.handle

    def handle(req: httpx.Request) -> httpx.Response:
        if req.url.path == "/session/status":
            return httpx.Response(200, json={} if aborted else {"ses_loop": {"type": "busy"}})
        if req.url.path.endswith("/abort"):
            aborted.append(req.url.path)
            return httpx.Response(200, json=True)
        return orig(req)

    async def on_archive(root: str, status: Any, perms: Any) -> None:
        return None

    async def on_findings(sid: str, findings: list[dict[str, Any]]) -> None:
        found.extend(f["detector"] for f in findings)

    stuck_by: list[str] = []

    async def on_abort(root: str, detector: str) -> None:
        stuck_by.append(detector)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as http:
            w = Watcher(
                OpenCodeClient(http, "http://oc"),
                http,
                on_archive,
                on_findings=on_findings,
                on_abort=on_abort,
                config=WatchConfig(
                    probe_budget_seconds=1,
                    probe_after_share=0.0,
                    probe_interval_seconds=1,
                    abort_on_stuck=True,
                    poll_interval=0.05,
                ),
            )
            stop = asyncio.Event()
            task = asyncio.create_task(w.run(stop, tick=0.05))
            await asyncio.sleep(0.6)
            stop.set()
            await task

    asyncio.run(go())
    assert found and stuck_by and aborted == ["/session/ses_loop/abort"]
    assert stuck_by[0] in found


def test_quiet_archived_trees_are_forgotten() -> None:
    rec, fx = _replay("subagent_tree")
    root = fx["root_id"]
    last = max(e["received"] for e in fx["events"]) / 1000.0
    rec.mark_archived(root, last + 3)
    assert rec.forget(last + 100, after=3600) == []
    assert rec.forget(last + 4000, after=3600) == [root]
    assert rec.tree(root) == [] and rec.status == {} and rec.due(last + 5000, 1.0) == []
