"""Claude Code sessions in the console, in real Chromium: the Sessions source column and filter,
the Costs split by source, and a Workflow run's agents in the session tree.

The store is the console tests' own (captured OpenCode runs, a small fleet, a Claude CLI run)
plus two Claude Code transcripts archived by the real importer: the captured subagent run of
the real CLI 2.1.328 and a Workflow run.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from browser_harness import CHROMIUM, TOKEN, Page, serve
from console_seed import Store, build_store
from realparts import require

from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from telemetry.services.claude_import import archive_claude
from telemetry.settings import Settings
from telemetry.store.db import make_engine

pytestmark = pytest.mark.chromium

CLAUDE = Path(__file__).parents[1] / "fixtures" / "claude"
SUBAGENT_RUN = "d15e7671-43aa-4bc1-98a3-958280fe72da"
WORKFLOW_RUN = "7f3b2c10-9e4d-4a61-b0c2-5d8e1f2a3b4c"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    """The console store with Claude Code sessions archived into it (shadows the harness's)."""
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    root = tmp_path_factory.mktemp("console-claude")
    settings = Settings(data_dir=root / "data", ingest_token=TOKEN, _env_file=None)  # type: ignore[arg-type, call-arg]
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)"])
    try:
        store = build_store(settings, worker.pid)
        engine = make_engine(settings.db_url)
        try:
            for folder, sessions in (
                (CLAUDE / "d_subagent_tree" / "json", 2),
                (CLAUDE / "w_workflow_run", 4),
            ):
                (files,) = find_sessions(folder)
                out = archive_claude(load_tree(files), settings=settings, engine=engine)
                # the workflow run lacks one agent's transcript: archived, and said to be incomplete
                assert out.files and out.indexed.new == sessions
        finally:
            engine.dispose()
        with serve(settings, root / "server.log") as (base, _):
            yield base, store
    finally:
        worker.kill()
        worker.wait()


def _claude_ids(base: str) -> set[str]:
    items = httpx.get(f"{base}/api/sessions", params={"source": "claude_code", "limit": 200}).json()["items"]
    return {s["session_id"] for s in items}


def test_sessions_show_the_source_and_filter_by_it(ui: Page) -> None:
    from playwright.sync_api import expect

    claude = _claude_ids(ui.base)
    assert {SUBAGENT_RUN, WORKFLOW_RUN} <= claude
    ui.go("#/sessions")
    rows = ui.page.locator("#sessions tbody tr")
    expect(rows.first).to_be_visible()
    total = rows.count()
    assert total > len(claude)
    sources = set(rows.locator("td:nth-child(2)").all_inner_texts())
    assert sources == {"OpenCode", "Claude Code"}
    ui.page.select_option("#f-source", "claude_code")
    expect(ui.page).to_have_url(re.compile(r"source=claude_code"))
    expect(rows).to_have_count(len(claude))
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"Claude Code"}
    ui.page.reload()
    expect(ui.page.locator("#f-source")).to_have_value("claude_code")
    expect(rows).to_have_count(len(claude))
    ui.page.select_option("#f-source", "opencode")
    expect(rows).to_have_count(total - len(claude))
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"OpenCode"}


def test_costs_split_by_source_counts_claude_sessions(ui: Page) -> None:
    from playwright.sync_api import expect

    ui.go("#/costs?since=30d")
    api = httpx.get(f"{ui.base}/api/costs", params={"since": "30d", "by": "model"}).json()
    (opus,) = [r for r in api["breakdowns"]["model"] if r["key"] == "claude-opus-5-5"]
    assert [x["source"] for x in opus["sources"]] == ["claude"] and opus["count"] >= 2
    row = ui.page.locator("#by-model tbody tr", has_text="claude-opus-5-5")
    expect(row.locator(".src")).to_have_text("Claude Code")
    expect(row.locator("td").first).to_have_text(str(opus["count"]))
    # a day both agents spent on shows the two sources side by side
    day = ui.page.locator("#by-day tbody tr", has_text="OpenCode")
    expect(day.first).to_contain_text("Claude Code")
    # the most expensive trees include the Claude session, linked to its own page
    tree = ui.page.locator("#top-trees tbody tr a", has_text="Use a subagent to list the repository files")
    expect(tree).to_have_attribute("href", f"#/session/{SUBAGENT_RUN}")


def test_workflow_agents_hang_under_their_session_with_labels(ui: Page) -> None:
    from playwright.sync_api import expect

    ui.go(f"#/session/{WORKFLOW_RUN}")
    tree = ui.page.locator("#tree ul.tree")
    children = tree.locator(":scope > li > ul > li")
    expect(children).to_have_count(3)
    for label in ("list:repo", "list:docs", "review"):
        expect(tree).to_contain_text(label)
    tree.locator("a", has_text="list:docs").click()
    expect(ui.page.locator("#tree .here")).to_contain_text("list:docs")
