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
