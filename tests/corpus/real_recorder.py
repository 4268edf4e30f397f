"""Record scripted runs from a real `opencode serve`, several at once on one server.

Each run's prompt carries a marker (`[run NAME]`); the fake LLM answers every request of that
run's root session from the run's script, and a subagent's requests from the script named by
the marker in its task prompt (`[run NAME/sub]`). One SSE tap and one status poller serve all
runs; each run keeps only its own sessions' events (status, idle, error, permissions, creation),
its own status samples (times relative to its first event, as `archiver.convert` expects) and
the messages of its session tree, fetched once it is idle or was aborted.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from driver import tree_ids
from fakellm import FakeLLM

__all__ = ["RoutingLLM", "Tap", "record_run"]

_MARK = re.compile(r"\[run ([\w./-]+)\]")
_KEEP = (
    "session.created",
    "session.status",
    "session.idle",
    "session.error",
    "session.compacted",
    "permission.asked",
    "permission.replied",
)


def _text(m: dict[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, list):
        return " ".join(str(x.get("text", "")) for x in c if isinstance(x, dict))
    return str(c or "")


def _marker(body: dict[str, Any]) -> str:
    """The run a request belongs to: the marker of its first user message, else (after a
    compaction replaced the history with a summary) the first marker anywhere in it."""
    msgs = body.get("messages", [])
    first = next((_text(m) for m in msgs if m.get("role") == "user"), "")
    found = _MARK.search(first) or next((f for m in msgs if (f := _MARK.search(_text(m)))), None)
    return found.group(1) if found else ""


class RoutingLLM(FakeLLM):
    """The fake LLM with one script and one cursor per marker instead of one for all."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, dict[str, Any]] = {}
        self.cursors: dict[str, int] = {}

    def next_turn(self, body: dict[str, Any]) -> dict[str, Any]:
        key = _marker(body)
        if not body.get("tools"):  # title or compaction summary: takes no turn
            if "small" in str(body.get("model", "")):
                return {"text": "A run"}
            # the summary carries the marker on, as the history it replaces did
            return {"text": f"Summary: the work so far, and what is left to do. [run {key}]"}
        with self._lock:
            script = self.scripts.get(key, {"turns": []})
            n = self.cursors.get(key, 0)
            turns = script.get("turns", [])
            self.cursors[key] = n + 1
            if n < len(turns):
                return dict(turns[n])
            return dict(script.get("default", {"text": "Done."}))


class Tap:
    """One SSE reader and one status/permission poller for the whole server."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.events: list[tuple[int, dict[str, Any]]] = []
        self.samples: list[tuple[float, dict[str, Any], list[dict[str, Any]]]] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._sse, self._poll)]

    def start(self) -> Tap:
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _sse(self) -> None:
        try:
            timeout = httpx.Timeout(10.0, read=None)
            with httpx.Client(base_url=self.url, timeout=timeout) as c, c.stream("GET", "/event") as resp:
                for line in resp.iter_lines():
                    if self._stop.is_set():
                        return
                    if line.startswith("data:"):
                        ev = json.loads(line[5:])
                        if ev.get("type") in _KEEP:
                            self.events.append((int(time.time() * 1000), ev))
        except httpx.HTTPError:
            return  # the server went away: recording is over

    def _poll(self) -> None:
        with httpx.Client(base_url=self.url, timeout=10.0) as http:
            while not self._stop.is_set():
                try:
                    status = http.get("/session/status").json()
                    perms = http.get("/permission").json()
                except (httpx.HTTPError, ValueError):
                    continue
                self.samples.append((time.time(), status, perms if isinstance(perms, list) else []))
                time.sleep(0.3)


def _sid_of(ev: dict[str, Any]) -> str:
    p = ev.get("properties", {})
    return str(p.get("sessionID") or p.get("info", {}).get("id") or "")


def _finished(http: httpx.Client, root: str) -> bool:
    msgs = http.get(f"/session/{root}/message").json()
    last = msgs[-1]["info"] if msgs else {}
    return last.get("role") == "assistant" and "completed" in last.get("time", {})


# However loaded the machine, a run that is still going after this long is aborted.
_LONGEST_S = 900.0


def _wait(http: httpx.Client, root: str, run: dict[str, Any], tap: Tap, llm: RoutingLLM) -> list[str]:
    """Until the tree is idle (answering asks as the run says), or abort: `abort_after` seconds
    after the run settled (its script used up, or an ask of its own left waiting), so a loaded
    machine slows a run down without cutting it short."""
    t0 = time.monotonic()
    quiet_since: float | None = None
    settled: float | None = None
    started = False
    turns = len(run["script"].get("turns", []))
    while True:
        time.sleep(1.0)  # every run polls the one server: keep it light
        ids = tree_ids(http, root)
        busy = any(s in tap.samples[-1][1] for s in ids) if tap.samples else True
        asks = [p for p in (tap.samples[-1][2] if tap.samples else []) if p.get("sessionID") in ids]
        for p in asks:
            if run.get("reply"):
                http.post(f"/permission/{p['id']}/reply", json={"reply": run["reply"]})
        if settled is None and (llm.cursors.get(run["name"], 0) >= turns or (asks and not run.get("reply"))):
            settled = time.monotonic()
        elapsed = time.monotonic() - t0
        waited = time.monotonic() - settled if settled is not None else 0.0
        if elapsed > _LONGEST_S or ("abort_after" in run and waited > run["abort_after"]):
            http.post(f"/session/{root}/abort")
            time.sleep(1.5)
            return tree_ids(http, root)
        started = started or busy
        if started and not busy and _finished(http, root):
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 1.5:
                return ids
        else:
            quiet_since = None


def record_run(url: str, llm: RoutingLLM, tap: Tap, run: dict[str, Any]) -> dict[str, Any]:
    """Drive one run (`{name, prompt, script, subs?, permission?, reply?, abort_after?}`)."""
    name = run["name"]
    llm.scripts[name] = run["script"]
    for sub, script in run.get("subs", {}).items():
        llm.scripts[f"{name}/{sub}"] = script
    with httpx.Client(base_url=url, timeout=30.0) as http:
        body = {"permission": run["permission"]} if run.get("permission") else {}
        root = http.post("/session", json=body).json()["id"]
        text = f"{run['prompt']} [run {name}]"
        http.post(f"/session/{root}/prompt_async", json={"parts": [{"type": "text", "text": text}]})
        ids = _wait(http, root, run, tap, llm)
        messages = {sid: http.get(f"/session/{sid}/message").json() for sid in ids}
    own = set(ids)
    events = [{"received": t, "event": ev} for t, ev in list(tap.events) if _sid_of(ev) in own]
    start = events[0]["received"] / 1000.0 if events else 0.0
    samples = [
        {
            "t": round(t - start, 3),
            "status": {s: v for s, v in status.items() if s in own},
            "pending_permissions": [p["id"] for p in perms if p.get("sessionID") in own],
        }
        for t, status, perms in list(tap.samples)
        if t >= start
    ]
    return {
        "opencode_version": "1.18.33",
        "scenario": name,
        "root_id": root,
        "messages": messages,
        "status_samples": samples,
        "events": events,
    }


def record_all(
    url: str,
    llm: RoutingLLM,
    runs: list[dict[str, Any]],
    done: Callable[[dict[str, Any], dict[str, Any]], None],
    workers: int = 6,
) -> None:
    """Record every run, `workers` at a time, handing each to `done(run, doc)` as it ends."""
    tap = Tap(url).start()
    time.sleep(1.0)

    def one(run: dict[str, Any]) -> None:
        t = time.monotonic()
        done(run, record_run(url, llm, tap, run))
        print(f"{run['name']}: {time.monotonic() - t:.0f} s", flush=True)

    pool = ThreadPoolExecutor(workers)
    try:
        for f in [pool.submit(one, r) for r in runs]:
            f.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)  # stopped early: do not wait for the rest
        tap.stop()
