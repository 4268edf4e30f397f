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
from typing import Any

import httpx
import orjson
import pytest
from browser_harness import CHROMIUM, TOKEN, Page, serve
from console_seed import Store, build_store
from realparts import require

from archiver.archive import ArchiveResult, write_documents
from archiver.claude.layout import find_sessions
from archiver.claude.loading import load_tree
from archiver.document import build_documents
from telemetry.archiving import redactor_for
from telemetry.services.claude.importer import archive_claude
from telemetry.services.index.archive_import import import_archives
from telemetry.settings import Settings
from telemetry.store.db import make_engine

sys.path.insert(0, str(Path(__file__).parents[1] / "archiver"))
from archiver_fakes import tree_from_fixture

pytestmark = pytest.mark.chromium

CLAUDE = Path(__file__).parents[1] / "fixtures" / "claude"
OPENCODE = Path(__file__).parents[1] / "fixtures" / "opencode"
UNPRICED_RUN = "ses_unpricedbyanyone0001"
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
            _unpriced_opencode_session(root / "unpriced", settings, engine)
        finally:
            engine.dispose()
        with serve(settings, root / "server.log") as (base, _):
            yield base, store
    finally:
        worker.kill()
        worker.wait()


def _unpriced_opencode_session(folder: Path, settings: Settings, engine: Any) -> None:
    """A captured OpenCode run as a server with no price for its model records it (cost 0),
    archived under an id of its own."""
    raw = (OPENCODE / "healthy.json").read_bytes()
    fx = orjson.loads(raw.replace(orjson.loads(raw)["root_id"].encode(), UNPRICED_RUN.encode()))
    for msgs in fx["messages"].values():
        for m in msgs:
            if m["info"].get("role") == "assistant":
                m["info"].update(cost=0, providerID="fake", modelID="fake-free")
    docs = build_documents(tree_from_fixture(fx), archived_at="2026-11-30T10:00:00.000Z")
    write_documents(docs, folder, redactor_for(settings), ArchiveResult(UNPRICED_RUN, "x"))
    report = import_archives(engine, folder, settings, redactor_for(settings))
    assert report.stats.new == 1 and not report.skipped, report.to_dict()


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


def test_a_session_octel_could_not_price_names_its_model(ui: Page) -> None:
    """An OpenCode session whose server recorded no cost, on a model nobody prices: the session
    page names the model unpriced instead of showing a silent $0."""
    from playwright.sync_api import expect

    got = httpx.get(f"{ui.base}/api/sessions/{UNPRICED_RUN}").json()
    assert got["session"]["unpriced_models"] == ["fake/fake-free"]
    ui.go(f"#/session/{UNPRICED_RUN}")
    expect(ui.page.locator("h1 + p.muted")).to_contain_text("unpriced: fake/fake-free")
