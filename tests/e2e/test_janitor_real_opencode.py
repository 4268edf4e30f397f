"""End to end on a real `opencode serve` 1.18.33: the janitor deletes only the trees archived,
verified and old; a running tree, an unarchived tree, a tree changed after its archive and a
young tree are kept, each with its reason; a dry run deletes nothing; the audit rows say it all.
``now`` is handed in (a week on from the moment between the old trees and the young one), so no
test waits a week and none depends on timing."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from driver import idle, run_prompt, start, tree_ids, wait_for
from fakellm import FakeLLM
from opencode_harness import OpenCode
from sqlmodel import select
from watch_thread import Store, Watch

from telemetry.archive_store import archive_store
from telemetry.archiving import archive_session_tree, redactor_for
from telemetry.queries.actions import ActionOut, list_actions
from telemetry.queries.lost import count_lost
from telemetry.store.db import session_scope
from telemetry.store.models import SessionIndex
from telemetry.tower.janitor import sweep
from telemetry.tower.janitor_report import JanitorReport
from telemetry.tree_archiving import opencode_client

pytestmark = pytest.mark.opencode

WEEK = 7 * 86_400.0
T = 180.0  # seconds a run may take on a loaded machine (a bound, not a measure)
DONE = {"title": "Janitor", "turns": [], "default": {"text": "Done."}}
SUBAGENT = {
    "title": "Delegate",
    "turns": [
        {
            "tool_calls": [
                {
                    "name": "task",
                    "arguments": {
                        "description": "Look",
                        "prompt": "Look around.",
                        "subagent_type": "general",
                    },
                }
            ]
        },
        {"text": "Child: looked."},
        {"text": "Root: the child looked."},
    ],
}
ASK = {"permission": [{"permission": "bash", "pattern": "*", "action": "ask"}]}
PUSH = {"title": "Push", "turns": [{"tool_calls": [{"name": "bash", "arguments": {"command": "git push"}}]}]}


def _archive(store: Store, url: str, root: str) -> None:
    out = archive_session_tree(root, settings=store.settings, engine=store.engine, server_url=url)
    assert out.ok, out.to_dict()


def _sweep(store: Store, url: str, now: float, roots: set[str], **kw: Any) -> JanitorReport:
    async def go() -> JanitorReport:
        async with httpx.AsyncClient(timeout=T) as http:
            return await sweep(
                opencode_client(http, url, store.settings),
                store.engine,
                archive_store(store.settings, store.engine),
                older_than_s=WEEK,
                redactor=redactor_for(store.settings),
                now=now,
                roots=roots,
                **kw,
            )

    return asyncio.run(go())


def test_only_archived_verified_old_trees_are_deleted(
    opencode: OpenCode, fake_llm: FakeLLM, octel_store: Store
) -> None:
    url = opencode.url
    with httpx.Client(base_url=url, timeout=T) as http:
        fake_llm.load(SUBAGENT)
        old = run_prompt(http, "Delegate a look around.", timeout=T)
        assert len(old["ids"]) == 2
        _archive(octel_store, url, old["root"])
        fake_llm.load(DONE)
        changed = run_prompt(http, "Say done.", timeout=T)["root"]
        _archive(octel_store, url, changed)
        http.post(f"/session/{changed}/prompt_async", json={"parts": [{"type": "text", "text": "Again."}]})
        wait_for(lambda: len(http.get(f"/session/{changed}/message").json()) >= 4, timeout=T)
        idle(http, changed, timeout=T)
        unarchived = run_prompt(http, "Say done.", timeout=T)["root"]
        fake_llm.load(PUSH)
        running = start(http, "Push the branch.", ASK)
        asked = wait_for(lambda: [p for p in http.get("/permission").json() if p["sessionID"] == running], T)
        time.sleep(1.1)
        moment = time.time()  # every tree above last moved before this, the young one after it
        time.sleep(1.1)
        fake_llm.load(DONE)
        young = run_prompt(http, "Say done.", timeout=T)["root"]
        _archive(octel_store, url, young)
        ours = {old["root"], changed, unarchived, running, young}
        now = moment + WEEK

        dry = _sweep(octel_store, url, now, ours, dry_run=True)
        fates = {t.root_session_id: (t.fate, t.reason) for t in dry.trees}
        expected_kept = {
            changed: ("kept", "changed"),
            unarchived: ("kept", "unarchived"),
            running: ("kept", "running"),
            young: ("kept", "young"),
        }
        assert fates == {old["root"]: ("would_delete", None), **expected_kept}
        assert all(http.get(f"/session/{s}").status_code == 200 for s in old["ids"])
        with session_scope(octel_store.engine, write=False) as db:
            assert list_actions(db).items == []

        messages = sum(len(http.get(f"/session/{s}/message").json()) for s in old["ids"])
        report = _sweep(octel_store, url, now, ours)
        fates = {t.root_session_id: (t.fate, t.reason) for t in report.trees}
        assert fates == {old["root"]: ("deleted", None), **expected_kept}
        assert all(http.get(f"/session/{s}").status_code == 404 for s in old["ids"])  # the child too
        assert all(http.get(f"/session/{r}").status_code == 200 for r in expected_kept)
        assert (report.trees_deleted, report.sessions_deleted, report.messages_deleted) == (1, 2, messages)
        assert report.parts_deleted >= messages and report.archive_bytes > 0
        by_root = {t.root_session_id: t for t in report.trees}
        assert "messages on the server" in by_root[changed].detail
        with session_scope(octel_store.engine, write=False) as db:
            rows = {a.root_session_id: a for a in list_actions(db).items}
        assert set(rows) == ours
        assert (rows[old["root"]].rule, rows[old["root"]].action, rows[old["root"]].outcome) == (
            "delete_archived_after",
            "delete",
            "done",
        )
        assert rows[old["root"]].evidence["sessions"] == 2
        for root, (_, reason) in expected_kept.items():
            assert (rows[root].outcome, rows[root].evidence["reason"]) == ("skipped", reason)

        # the run waiting on its ask is let go, so it leaves the shared server quiet
        http.post(f"/permission/{asked[0]['id']}/reply", json={"reply": "reject"})
        idle(http, running, timeout=T)
        assert running in tree_ids(http, running)


def test_watch_deletes_what_it_archived_once_verified(
    opencode: OpenCode, fake_llm: FakeLLM, watch: Watch
) -> None:
    """`octel watch --delete-archived-after 0s`: the watcher archives a tree when it goes
    quiet, its janitor deletes it once the archive reads back valid, and the deletion is not
    taken for a tree lost before it was archived."""
    fake_llm.load(DONE)
    with (
        watch(delete_archived_after=0.0, janitor_every=1.0) as watched,
        httpx.Client(base_url=opencode.url, timeout=T) as http,
    ):
        # the janitor may delete the tree the moment it is archived: wait for that, not for idle
        root = start(http, "Say done.")
        wait_for(lambda: http.get(f"/session/{root}").status_code == 404, T)

        def audited() -> list[ActionOut]:
            with session_scope(watched.engine, write=False) as db:
                return [
                    a for a in list_actions(db).items if a.root_session_id == root and a.outcome == "done"
                ]

        (row,) = wait_for(audited, T)
        time.sleep(2.0)  # the watcher hears of the deletion: no rescue, no lost tree
        with session_scope(watched.engine, write=False) as db:
            assert count_lost(db) == 0
            (indexed,) = db.exec(select(SessionIndex).where(SessionIndex.session_id == root))
    assert row.watcher and row.action == "delete" and row.evidence["messages"] == indexed.message_count
    assert any("janitor: deleted 1 trees" in line for line in watched.logs)
