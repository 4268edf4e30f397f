"""The console's live views in real Chromium against a live `octel serve`: Running now with the
unanswered ask loudest, Sessions with live rows grouped under their root and a state column,
a live session's page with its state, tree so far and live findings, refreshed in place."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from live_seed import seed_interleaved_archives, seed_waiting_tree
from liveserver import live_octel
from realparts import require

pytestmark = pytest.mark.chromium

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, list[str]]]:
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    root = tmp_path_factory.mktemp("live-console")
    url = f"sqlite:///{root / 'octel.db'}"
    child, ids = seed_waiting_tree(url)
    seed_interleaved_archives(url)
    (root / "data").mkdir()
    with live_octel(root / "data", url) as base:
        yield base, child, ids


@pytest.fixture
def page(site: tuple[str, str, list[str]]) -> Iterator[Any]:
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)
    errors: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            p = browser.new_page(viewport={"width": 1300, "height": 500})
            p.set_default_timeout(WAIT_MS)
            p.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            p.on("pageerror", lambda e: errors.append(str(e)))
            yield p
        finally:
            browser.close()
    assert errors == [], errors


def test_running_now_puts_the_unanswered_ask_first(page: Any, site: tuple[str, str, list[str]]) -> None:
    from playwright.sync_api import expect

    base, child, _ = site
    page.goto(f"{base}/#/overview")
    ask = page.locator("#running-now .ask-alert")
    expect(ask).to_have_count(1)
    expect(ask).to_contain_text("bash ask")
    expect(ask).to_contain_text("git push *")
    expect(ask).to_contain_text(re.compile(r"(9m|10m) \d\ds"))
    expect(ask).to_contain_text("impl-2003")
    assert ask.get_attribute("data-session") == child
    # the loudest thing: the first block under the page title, above the daemons
    first = page.locator("main section").first
    expect(first.locator("h2")).to_have_text("Running now")
    counts = page.locator('#running-now .live-counts li[data-state="waiting_permission"]')
    expect(counts).to_contain_text("1")


def test_sessions_list_live_rows_under_their_root_with_a_state_filter(
    page: Any, site: tuple[str, str, list[str]]
) -> None:
    from playwright.sync_api import expect

    base, child, ids = site
    page.goto(f"{base}/#/sessions?show=live")
    rows = page.locator("#live-sessions table.live tbody tr")
    expect(rows).to_have_count(len(ids))
    order = [rows.nth(i).get_attribute("data-session") for i in range(len(ids))]
    assert order[0] == ids[0] and order.index(child) == 1, "children sit under their root"
    expect(rows.nth(1).locator("td.title")).to_contain_text("↳")
    expect(rows.nth(1).locator("td").nth(1)).to_contain_text("waiting on an ask")
    # which OpenCode each row's server runs (1.x and 2.x servers may be followed side by side)
    expect(rows.first.locator("td.opencode")).to_have_text("1.18.33")
    assert rows.first.locator("td.opencode").get_attribute("title") == "http://oc:4096"
    page.select_option("#f-state", "waiting_permission")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-session") == child
    assert "state=waiting_permission" in page.url


def test_a_live_session_page_shows_state_tree_and_findings_and_keeps_its_scroll(
    page: Any, site: tuple[str, str, list[str]]
) -> None:
    from playwright.sync_api import expect

    base, child, ids = site
    page.goto(f"{base}/#/session/{child}")
    head = page.locator("#session-head")
    expect(head.locator(".pill.live-waiting_permission")).to_be_visible()
    expect(head.locator("p.live-now")).to_contain_text(re.compile(r"waiting on an ask for (9m|10m)"))
    expect(head).to_contain_text("impl-2003 (implementer)")
    expect(page.locator("#tree li")).to_have_count(len(ids))
    live_finding = page.locator('#findings div.finding[data-detector="permission_deadlock"]')
    expect(live_finding).to_contain_text("stuck")
    # said in the archive's words: its sentence, not only the detector's name
    expect(live_finding.locator("p.sentence")).to_contain_text("with no reply")
    # its messages so far, before any archive: the prompt, what it said, its tool calls
    msgs = page.locator("#timeline article.msg")
    expect(msgs).to_have_count(4)
    expect(msgs.first).to_contain_text("Explore the repo and delegate the README check.")
    expect(msgs.nth(1)).to_contain_text("Child here, listing files.")
    tool = msgs.nth(1).locator('details.part.tool[data-tool="bash"]').first
    tool.locator("summary").click()
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    y = page.evaluate("window.scrollY")
    assert y > 0
    before = head.locator("p.live-now").inner_text()
    expect(head.locator("p.live-now")).not_to_have_text(before, timeout=25_000)  # refreshed (10 s)
    assert page.evaluate("window.scrollY") == y
    assert tool.evaluate("d => d.open")  # the tool call the reader opened stays open


@pytest.mark.parametrize("size", [(1300, 500), (390, 844)], ids=["desktop", "phone"])
def test_archived_children_sit_under_their_own_root(
    page: Any, site: tuple[str, str, list[str]], size: tuple[int, int]
) -> None:
    """Archive times of trees interleave; the list still shows each child under its parent,
    and a child whose root is not listed says whose subagent it is instead of hanging under
    the row above."""
    from playwright.sync_api import expect

    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{site[0]}/#/sessions?show=archived")
    rows = page.locator("#sessions table.sessions tbody tr")
    expect(rows).to_have_count(5)
    order = [rows.nth(i).get_attribute("data-session") for i in range(5)]
    # newest archived first for roots (b, then the loose child of c, then a), children under theirs
    assert order == ["ses_tree_b", "ses_tree_c1", "ses_tree_a", "ses_tree_a1", "ses_tree_a2"]
    title = rows.nth(1).locator("td.title")
    expect(title).to_contain_text("subagent of ses_tree_c")
    assert title.locator("a").first.get_attribute("href") == "#/session/ses_tree_c"
    expect(rows.nth(3).locator("td.title")).to_contain_text("↳ ")
    expect(rows.nth(4).locator("td.title")).to_contain_text("↳↳ ")
    for i in (0, 2):
        assert "↳" not in rows.nth(i).locator("td.title").inner_text()
