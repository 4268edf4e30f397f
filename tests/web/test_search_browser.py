"""The console's search box in real Chromium, at desktop and phone size: what agents said and
ran is found, the matches marked, markup shown as text, and a hit opens its session at its turn."""

from __future__ import annotations

import re

import pytest
from browser_harness import Page
from console_seed import HOSTILE_TEXT, archive_hostile

pytestmark = pytest.mark.chromium


def _hits_open_their_turn(p: Page) -> None:
    from playwright.sync_api import expect

    root = p.store.seeded.scenarios["tool_errors"]
    p.go("#/sessions?q=" + '"File not found"'.replace(" ", "%20"))
    hits = p.page.locator("#search-hits li.hit")
    expect(hits).to_have_count(2)
    expect(hits.first.locator("mark")).to_have_text("File not found")
    expect(hits.first).to_contain_text("tool · read")
    turn = hits.first.get_attribute("data-turn")
    hits.first.locator("a").click()
    expect(p.page).to_have_url(re.compile(f"#/session/{root}\\?offset={turn}$"))
    expect(p.page.locator("#timeline")).to_contain_text(f"messages {int(turn or 0) + 1}\u2013")


def test_search_hits_open_the_session_at_their_turn(ui: Page) -> None:
    _hits_open_their_turn(ui)


def test_search_hits_on_a_phone(phone: Page) -> None:
    _hits_open_their_turn(phone)
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_an_id_in_the_box_names_its_session_and_markup_stays_text(ui: Page) -> None:
    from playwright.sync_api import expect

    sid = ui.store.seeded.scenarios["secrets"]
    ui.go("#/sessions?q=cyc-secrets")
    expect(ui.page.locator("#search-jump a")).to_have_text(sid)
    archive_hostile(ui.store.settings)
    ui.go("#/sessions?q=pwned")
    hit = ui.page.locator("#search-hits li.hit").first
    expect(hit.locator("p.snippet")).to_contain_text(HOSTILE_TEXT[:20])
    assert ui.page.locator("#search-hits img, #search-hits script").count() == 0
    assert ui.page.evaluate("window.__pwned") is None
