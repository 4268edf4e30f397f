"""The console's search box in real Chromium, at desktop and phone size: what agents said and
ran is found, the matches marked, markup shown as text, and a hit opens its session at its turn;
the same box filters the live table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser_harness import Page
from console_seed import HOSTILE_TEXT, archive_hostile

pytestmark = pytest.mark.chromium

LIVE_FIXTURE = Path(__file__).parents[1] / "fixtures" / "opencode" / "subagent_tree.json"


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


def _the_box_filters_the_live_table(p: Page) -> None:
    """The one box: the live table keeps the live sessions the query names (here a tool the
    grandchild ran and words it read), and says so when none is named."""
    from playwright.sync_api import expect

    fx = json.loads(LIVE_FIXTURE.read_text())
    root = fx["root_id"]
    child = next(s["id"] for s in fx["sessions"] if s.get("parentID") == root)
    grandchild = next(s["id"] for s in fx["sessions"] if s.get("parentID") == child)
    p.go("#/sessions")
    expect(p.page.locator("#live-sessions tr[data-session]")).to_have_count(3)
    p.go("#/sessions?q=tool%3Aread%20README")
    rows = p.page.locator("#live-sessions tr[data-session]")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-session") == grandchild
    p.go("#/sessions?q=nothing-says-this")
    expect(p.page.locator("#live-none")).to_be_visible()
    expect(p.page.locator("#live-sessions tr[data-session]")).to_have_count(0)


def test_the_box_filters_the_live_table(ui: Page) -> None:
    _the_box_filters_the_live_table(ui)


def test_the_box_filters_the_live_table_on_a_phone(phone: Page) -> None:
    _the_box_filters_the_live_table(phone)
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
