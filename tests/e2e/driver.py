"""Drive prompts through a real opencode server: start one, wait until its whole tree is idle,
and wait for anything else to be seen."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


def tree_ids(http: httpx.Client, root: str) -> list[str]:
    out, queue = [], [root]
    while queue:
        sid = queue.pop(0)
        out.append(sid)
        kids = http.get(f"/session/{sid}/children").json()
        queue += [k["id"] for k in kids] if isinstance(kids, list) else []
    return out


def wait_for(what: Callable[[], Any], timeout: float = 60.0, step: float = 0.25) -> Any:
    """What ``what`` returns once it is truthy (asked every ``step`` seconds); AssertionError
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(step)
    raise AssertionError(f"not seen in {timeout} s")


def start(http: httpx.Client, text: str, session: dict[str, Any] | None = None) -> str:
    """A new root session (created with ``session``) working on ``text``; its id."""
    root = str(http.post("/session", json=session or {}).json()["id"])
    resp = http.post(f"/session/{root}/prompt_async", json={"parts": [{"type": "text", "text": text}]})
    assert resp.status_code in (200, 204), resp.text
    return root


def idle(http: httpx.Client, root: str, timeout: float = 60.0) -> None:
    """Wait until no session of the tree under ``root`` is busy."""
    wait_for(lambda: not any(s in http.get("/session/status").json() for s in tree_ids(http, root)), timeout)


def run_prompt(
    http: httpx.Client,
    text: str,
    *,
    timeout: float = 60.0,
    session: dict[str, Any] | None = None,
    reply: str | None = None,
) -> dict[str, Any]:
    """Start a root session with ``text``; return {root, ids} once the tree is idle.
    With ``reply``, every pending permission ask is answered that way."""
    root = start(http, text, session)
    t0 = time.monotonic()
    started, quiet_since = False, None
    while time.monotonic() - t0 < timeout:
        status = http.get("/session/status").json()
        if reply:
            for p in http.get("/permission").json():
                http.post(f"/permission/{p['id']}/reply", json={"reply": reply})
        ids = tree_ids(http, root)
        busy = any(s in status for s in ids)
        msgs = http.get(f"/session/{root}/message").json()
        last = msgs[-1]["info"] if msgs else {}
        done = last.get("role") == "assistant" and "completed" in last.get("time", {})
        started = started or busy or done
        if started and not busy and done:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 1.5:
                return {"root": root, "ids": ids}
        else:
            quiet_since = None
        time.sleep(0.25)
    raise TimeoutError(f"session tree {root} still busy after {timeout} s")
