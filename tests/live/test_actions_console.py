"""The live session page in real Chromium shows the audit trail of the watch rules on that
session: each action with its rule, outcome, evidence and the server's answer."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from live_seed import seed_waiting_tree
from liveserver import live_octel
from realparts import require

from archiver.redact import Redactor
from telemetry.store.db import make_engine, session_scope
from telemetry.tower.actions import record_action
from tower.act import Carried
from tower.actions import Intent

pytestmark = pytest.mark.chromium

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    root = tmp_path_factory.mktemp("actions-console")
    url = f"sqlite:///{root / 'octel.db'}"
    child, _ = seed_waiting_tree(url)
    engine = make_engine(url)
    red = Redactor(b"k" * 32, [])
    ask = Intent(
        "deny_asks_after",
        "reject_ask",
        child,
        "ask:per_1",
        {"request_id": "per_1", "permission": "bash", "waited_s": 301.0},
        "per_1",
    )
    with session_scope(engine) as db:
        done = Carried(ask, "done", "POST /permission/per_1/reply reject", 200, "true")
        record_action(db, "http://oc:4096", done, redactor=red, at=time.time() - 60)
        skipped = Carried(ask, "skipped", "the ask was answered")
        record_action(db, "http://oc:4096", skipped, redactor=red, at=time.time())
    engine.dispose()
    (root / "data").mkdir()
    with live_octel(root / "data", url) as base:
        yield base, child


def test_a_session_page_lists_what_the_rules_did(site: tuple[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, child = site
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page: Any = browser.new_page(viewport={"width": 1300, "height": 700})
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/#/session/{child}")
            rows = page.locator("#actions table.actions tbody tr")
            expect(rows).to_have_count(2, timeout=30_000)
            expect(rows.nth(0)).to_have_attribute("data-outcome", "skipped")
            expect(rows.nth(0)).to_contain_text("the ask was answered")
            expect(rows.nth(1)).to_contain_text("deny_asks_after")
            expect(rows.nth(1)).to_contain_text("bash ask waited 301s")
            expect(rows.nth(1)).to_contain_text("200 true")
        finally:
            browser.close()
    assert errors == [], errors
