"""End to end on a real opencode serve: a dispatcher deletes each root the instant it goes idle
(subagents included), well inside the watcher's settle delay. Every message is still archived,
from the watcher's mirror of the event stream, and the archive says so."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest
from dispatcher import run_and_delete_at_idle
from driver import run_prompt, tree_ids
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select
from watch_thread import Store, Watch

from archiver.files import find_archives, read_archive
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.lost_models import LostTree
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.opencode

SCRIPT = {
    "title": "Deleted at idle",
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
        {"text": "Hello from the child.", "reasoning": "The parent asked for a greeting."},
        {"text": "All done."},
    ],
}


_SID = re.compile(r"ses_[A-Za-z0-9]+")  # the task tool's output names its child session


def shape(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a message says, without ids, times and snapshot hashes (they differ run to run)."""
    out = []
    for m in messages:
        parts = tuple(
            (
                p.get("type"),
                p.get("text"),
                p.get("tool"),
                (p.get("state") or {}).get("status"),
                _SID.sub("ses_…", str((p.get("state") or {}).get("output"))),
            )
            for p in m["parts"]
            if p.get("type") not in ("step-start", "patch")
        )
        out.append((m["info"].get("role"), m["info"].get("finish"), parts))
    return out


def tree_shape(by_depth: dict[int, list[dict[str, Any]]]) -> dict[int, list[tuple[Any, ...]]]:
    return {d: shape(ms) for d, ms in sorted(by_depth.items())}


@pytest.fixture
def watched(watch: Watch) -> Iterator[Store]:
    """A watcher with the default settle delay (the race is real)."""
    with watch(settle=2.0) as store:
        yield store


def _archived(settings: Settings, root: str, want: int, wait: float = 20.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + wait
    docs: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        docs = [
            d for d in map(read_archive, find_archives(settings.archives)) if d["root_session_id"] == root
        ]
        if len(docs) >= want:
            break
        time.sleep(0.25)
    return docs


def test_roots_deleted_the_instant_they_go_idle_are_archived_whole_from_the_mirror(
    opencode: OpenCode, fake_llm: FakeLLM, watched: Store
) -> None:
    settings, engine, logs = watched.settings, watched.engine, watched.logs
    # the same script once left on the server: what every archive must hold
    fake_llm.load(SCRIPT)
    with httpx.Client(base_url=opencode.url, timeout=15.0) as http:
        ref = run_prompt(http, "Look at the project.")
        ids = tree_ids(http, ref["root"])
        depth = {s: (0 if s == ref["root"] else 1) for s in ids}
        expected = tree_shape({depth[s]: http.get(f"/session/{s}/message").json() for s in ids})
    assert len(expected) == 2 and len(expected[0]) == 4, expected

    roots = []
    for _ in range(3):
        fake_llm.load(SCRIPT)
        run = run_and_delete_at_idle(opencode.url, "Look at the project.")
        assert run["status"] == 200 and run["gone"], run
        roots.append(run["root"])
    for root in roots:
        docs = _archived(settings, root, 2)
        assert len(docs) == 2, logs
        assert {d["source"]["origin"] for d in docs} == {"mirror"}, logs
        assert all(d["walk_errors"] == [] for d in docs), [d["walk_errors"] for d in docs]
        assert tree_shape({d["depth"]: d["messages"] for d in docs}) == expected
    deadline, indexed = time.monotonic() + 10, set()
    while not set(roots) <= indexed and time.monotonic() < deadline:  # the index commits after the files
        time.sleep(0.25)
        with session_scope(engine, write=False) as db:
            indexed = {r.root_session_id for r in db.exec(select(SessionIndex))}
    assert set(roots) <= indexed
    with session_scope(engine, write=False) as db:
        assert list(db.exec(select(LostTree))) == []


def test_a_watcher_started_mid_run_reads_what_it_missed_and_archives_the_whole_tree(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch, octel_store: Store
) -> None:
    """The watch begins while the run is under way (a restart), then the root is deleted the
    instant it goes idle: the start of the run is read from the server when the mirror first
    sees the session, so the archive is still whole."""
    slow = {**SCRIPT, "turns": [{**SCRIPT["turns"][0], "delay": 4.0}, *SCRIPT["turns"][1:]]}
    fake_llm.load(slow)
    with ExitStack() as started:
        run = run_and_delete_at_idle(
            opencode.url,
            "Look at the project.",
            on_busy=lambda _root: started.enter_context(watch(settle=2.0)),
        )
        assert run["gone"], run
        docs = _archived(octel_store.settings, run["root"], 2)
    assert len(docs) == 2, octel_store.logs
    assert {d["source"]["origin"] for d in docs} == {"mirror"}
    assert all(d["walk_errors"] == [] for d in docs), [d["walk_errors"] for d in docs]
    by_depth = {d["depth"]: d["messages"] for d in docs}
    assert [len(by_depth[0]), len(by_depth[1])] == [4, 2]
    assert by_depth[0][0]["parts"][0]["text"] == "Look at the project."  # from before the watch
    with session_scope(octel_store.engine, write=False) as db:
        assert list(db.exec(select(LostTree))) == []
