"""A dispatcher as impatient as they come: it prompts a new root session on a real opencode
server and deletes the root the instant the server says it went idle (its subagents go with
it), before any watcher could have read the tree from the server."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx


def run_and_delete_at_idle(
    url: str,
    text: str,
    *,
    session: dict[str, Any] | None = None,
    timeout: float = 60.0,
    on_busy: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Start a root with ``text``; delete it on its first idle after busy (``on_busy`` hears
    the root once it is busy). Returns {root, status (of the DELETE), gone (the server answers
    404 for it afterwards)}."""
    deadline = time.monotonic() + timeout
    with (
        httpx.Client(base_url=url, timeout=15.0) as http,
        httpx.stream("GET", url + "/event", timeout=httpx.Timeout(10.0, read=timeout)) as events,
    ):
        lines = events.iter_lines()
        next(line for line in lines if line.startswith("data:"))  # server.connected: following
        root = http.post("/session", json=session or {}).json()["id"]
        resp = http.post(f"/session/{root}/prompt_async", json={"parts": [{"type": "text", "text": text}]})
        assert resp.status_code in (200, 204), resp.text
        busy = False
        for line in lines:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{root} never went idle")
            if not line.startswith("data:"):
                continue
            ev = json.loads(line[5:])
            props = ev.get("properties") or {}
            if props.get("sessionID") != root:
                continue
            kind = ev.get("type")
            state = (props.get("status") or {}).get("type") if kind == "session.status" else None
            if state == "busy" and not busy and on_busy is not None:
                on_busy(root)
            busy = busy or state == "busy"
            if busy and (kind == "session.idle" or state == "idle"):
                break
        status = http.delete(f"/session/{root}").status_code
        gone = http.get(f"/session/{root}").status_code == 404
    return {"root": root, "status": status, "gone": gone}
