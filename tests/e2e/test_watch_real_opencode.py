"""End to end: `watch_server` follows a real opencode serve and archives a finished tree with
the status history and permission events that OpenCode itself never stores."""

from __future__ import annotations

import time

import httpx
import pytest
from driver import run_prompt
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select
from watch_thread import Watch

from archiver.files import find_archives, read_archive
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.opencode

SCRIPT = {
    "title": "Watched run",
    "turns": [
        {"text": "Listing.", "tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
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
        {"text": "Hello from the child."},
        {"text": "All done."},
    ],
}


def test_watch_archives_with_status_and_permissions(
    fake_llm: FakeLLM, opencode: OpenCode, watch: Watch
) -> None:
    with watch(label="watched") as watched:
        settings, engine = watched.settings, watched.engine
        fake_llm.load(SCRIPT)
        ask = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}
        with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
            run = run_prompt(http, "Look at the project.", session=ask, reply="once")
        root = run["root"]
        deadline = time.monotonic() + 30
        docs: dict[str, dict] = {}
        while time.monotonic() < deadline:
            docs = {d["session_id"]: d for d in map(read_archive, find_archives(settings.archives))}
            if set(run["ids"]) <= set(docs):
                break
            time.sleep(0.5)
    assert set(run["ids"]) <= set(docs), watched.logs
    rdoc = docs[root]
    types = [h["type"] for h in rdoc["status_history"]]
    assert types[0] == "busy" and types[-1] == "idle"
    kinds = [e["event"]["type"] for e in rdoc["permission_events"]]
    assert "permission.asked" in kinds and "permission.replied" in kinds
    child = next(d for d in docs.values() if d["depth"] == 1)
    assert [h["type"] for h in child["status_history"]][-1] == "idle"
    with session_scope(engine, write=False) as db:
        rows = list(db.exec(select(SessionIndex)))
    assert {r.session_id for r in rows} >= set(run["ids"]) and all(r.label == "watched" for r in rows)
