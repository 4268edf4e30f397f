"""Session pages that say one thing, readable on a phone, in real Chromium at 1366x900 and
390x844: an archived session shows its record (the live block only while it runs now), the
decisive cell of a table (its verdict or cost) is on screen, and axe-core finds nothing on a
session page with subagents."""

from __future__ import annotations

from typing import Any

import pytest
from browser_harness import PHONE, Page, open_page
from console_seed import Store

pytestmark = pytest.mark.chromium

LAPTOP = {"width": 1366, "height": 900}
SIZES = [LAPTOP, PHONE]
IDS = ["laptop", "phone"]


def _open(p: Page, sid: str) -> None:
    from playwright.sync_api import expect

    p.go(f"#/session/{sid}")
    expect(p.page.locator("#session-head h1")).to_be_visible()
    expect(p.page.locator("#timeline .msg").first).to_be_visible()


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_an_archived_session_shows_its_record_not_a_stale_live_block(
    browser: Any, live: tuple[str, Store], viewport: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    root = live[1].seeded.scenarios["subagent_tree"]
    with open_page(browser, live, viewport) as p:
        _open(p, root)
        expect(p.page.locator("#live-now")).to_be_empty()  # its live row is idle: not running now
        expect(p.page.locator("main h1")).to_have_count(1)
        expect(p.page.locator("#session-cycle")).to_contain_text("cyc-subagent_tree")
        assert "cycle \u2013" not in p.page.locator("main").inner_text()


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_a_session_running_again_says_so_once_above_its_record(
    browser: Any, live: tuple[str, Store], viewport: dict[str, int]
) -> None:
    import httpx
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        asks = httpx.get(f"{p.base}/api/live", params={"state": "waiting_permission"}).json()["items"]
        child = asks[0]
        _open(p, child["session_id"])
        now = p.page.locator("#live-now")
        expect(now.locator(".ask-alert")).to_contain_text("git push *")
        expect(p.page.locator("main h1")).to_have_count(1)  # the record's title, once
        assert p.page.locator("main").inner_text().count(child["title"]) <= 2  # h1 and the tree
        said = now.locator("p.live-now").inner_text()
        assert said.count(" for ") == 1, f"the state and its age said twice: {said!r}"
        url = now.locator(".fact .url")
        expect(url).to_have_text(child["server"])
        lines = url.evaluate("e => e.getClientRects().length")
        assert lines == 1, f"the server URL is broken over {lines} lines"


EVERY_IMPACT = ("minor", "moderate", "serious", "critical")


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_axe_finds_nothing_on_session_pages_with_subagents(
    browser: Any, live: tuple[str, Store], viewport: dict[str, int]
) -> None:
    """The root of a subagent tree (its task calls link to each subagent, its timeline has a
    pager above and below) and a subagent, opened from the link: no finding of any impact,
    best practices included (nested-interactive, landmark-unique)."""
    from browser_harness import WCAG, axe_violations
    from playwright.sync_api import expect

    root = live[1].seeded.scenarios["subagent_tree"]
    with open_page(browser, live, viewport) as p:
        _open(p, root)
        link = p.page.locator("#timeline a", has_text="open subagent").first
        expect(link).to_be_visible()
        assert p.page.locator("summary a, summary button").count() == 0
        assert axe_violations(p.page, EVERY_IMPACT, (*WCAG, "best-practice")) == []
        link.click()
        expect(p.page).not_to_have_url(f"{p.base}/#/session/{root}")
        expect(p.page.locator("#session-head h1")).to_be_visible()
        expect(p.page.locator("#timeline .msg").first).to_be_visible()
        assert axe_violations(p.page, EVERY_IMPACT, (*WCAG, "best-practice")) == []


def test_the_heading_takes_the_focus_without_a_focus_box(browser: Any, live: tuple[str, Store]) -> None:
    """A new view moves the focus to its h1 (for a screen reader), but a heading is not a
    control: no focus ring on it, whether the view was opened by key or by click."""
    from playwright.sync_api import expect

    with open_page(browser, live, LAPTOP) as p:
        p.go("#/overview")
        expect(p.page.locator("main h1")).to_be_visible()
        for how in ("key", "click"):
            if how == "key":
                p.page.keyboard.press("3")
            else:
                p.page.locator("nav a", has_text="Costs").click()
            h1 = p.page.locator("main h1")
            expect(h1).to_be_focused()
            style = h1.evaluate("h => getComputedStyle(h).outlineStyle")
            assert style == "none", f"the h1 wears a focus box ({style}) after a {how}"
