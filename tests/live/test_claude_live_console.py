"""A Claude Code session at a permission prompt in the console (real Chromium, live `octel
serve`): Running now says it needs input and that it is answered at its terminal; its page has
no answer form (the CLI has no door for one), names Claude Code as its agent and shows its
messages so far."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from claude_lines import assistant, jsonl, tool_use, usage, user
from liveserver import live_octel
from realparts import require
from store_templates import migrate_by_copy

from archiver.redact import Redactor
from telemetry.store.db import make_engine, session_scope
from telemetry.store.migrate import upgrade
from telemetry.tower.live import store_live_rows
from telemetry.tower.live_messages import store_live_messages
from tower.claude_board import ClaudeBoard, claude_server
from tower.claude_tail import AgentSeen

pytestmark = pytest.mark.chromium

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
SID = "cccccccc-dddd-4eee-8fff-000000000001"


def _seed(url: str) -> None:
    board = ClaudeBoard(claude_server("/home/dev/.claude"), lambda _m: [])
    call = assistant(SID, "msg_1", [tool_use("tu_1", command="rm -rf build")], use=usage(900, 30))
    call[0]["message"]["stop_reason"] = "tool_use"
    board.feed(SID, "t.jsonl", jsonl([user(SID, "clean the build"), *call]), 1.0)
    board.on_agents({SID: AgentSeen(SID, "waiting", "permission prompt")})
    migrate_by_copy(url)  # a copy of the migrated template: `upgrade` finds it at head
    engine = make_engine(url)
    upgrade(engine)
    red = Redactor(b"k" * 32, [])
    with session_scope(engine) as db:
        store_live_rows(db, board.snapshot(2.0), redactor=red)
        store_live_messages(db, board.server, board.messages(), redactor=red)
    engine.dispose()


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    root: Path = tmp_path_factory.mktemp("claude-live-console")
    url = f"sqlite:///{root / 'octel.db'}"
    _seed(url)
    (root / "data").mkdir()
    with live_octel(root / "data", url) as b:
        yield b


def test_a_claude_session_needing_input_is_said_so_and_not_answered_here(base: str) -> None:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=30_000)
    errors: list[Any] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 700})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/#/overview")
            ask = page.locator("#running-now .ask-alert")
            expect(ask).to_contain_text("needs input: permission for Bash")
            expect(ask).to_contain_text("rm -rf build")
            expect(ask).to_contain_text("answer it at its terminal")
            page.goto(f"{base}/#/session/{SID}")
            expect(page.locator(".ask-alert")).to_contain_text("needs input")
            expect(page.locator(".fact", has_text="agent")).to_contain_text("Claude Code")
            expect(page.locator(".ask-answer")).to_have_count(0)
            # its messages so far, as for an OpenCode session: the prompt and the call waiting
            expect(page.locator("#timeline")).to_contain_text("clean the build")
            expect(page.locator("#timeline")).to_contain_text("rm -rf build")
        finally:
            browser.close()
    assert errors == [], errors
