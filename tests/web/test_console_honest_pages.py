"""Session pages that say one thing, readable on a phone, in real Chromium at 1366x900 and
390x844: an archived session shows its record (the live block only while it runs now), the
decisive cell of a table (its verdict or cost) is on screen, and axe-core finds nothing on a
session page with subagents."""

from __future__ import annotations

from typing import Any

import pytest
from browser_harness import PHONE, Page, open_page
from console_seed import Store

from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.timeutil import utcnow

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


LOOP = "ses_liveloop0000000000000001"


@pytest.fixture(scope="module")
def looping(live: tuple[str, Store]) -> str:
    """A session running now and never archived: a doom loop of one failing pytest call, $4.93
    so far, running bash for 12 minutes."""
    from datetime import timedelta

    now = utcnow()
    engine = make_engine(live[1].settings.db_url)
    try:
        with session_scope(engine) as db:
            db.add(
                LiveSession(
                    server="http://127.0.0.1:4096",
                    session_id=LOOP,
                    root_session_id=LOOP,
                    title="Fix the flaky test until it passes",
                    agent="build",
                    model="fake-model",
                    state="running_tool",
                    tool="bash",
                    state_since=now - timedelta(minutes=12),
                    tool_since=now - timedelta(minutes=12),
                    last_activity_at=now,
                    turns=113,
                    cost_usd=4.93,
                    verdict="stuck",
                    worst_detector="doom_loop",
                    first_seen_at=now - timedelta(minutes=40),
                    updated_at=now,
                )
            )
    finally:
        engine.dispose()
    return LOOP


# (view, table, the column that decides a row): the verdict of a session, the cost of a spend row.
DECISIVE = [
    ("#/overview", "#running-now table.live", "verdict"),
    ("#/sessions", "#live-sessions table.live", "verdict"),
    ("#/sessions", "#sessions table.grid", "verdict"),
    *[("#/costs", f"#by-{k} table.grid", "cost") for k in ("agent", "model", "driver", "day")],
    ("#/costs", "#top-sessions table.grid", "own cost"),
]

# The first cell of the row (what it is about) and the cell under the header `name`: each on
# screen (within the viewport) and not covered by another cell.
_SEEN = """([row, name]) => {
  const heads = [...row.closest("table").tHead.rows[0].cells].map((h) => h.textContent.trim());
  return [row.cells[0], row.cells[heads.indexOf(name)]].map((c) => {
    const r = c.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return [r.left, r.right, innerWidth, !!hit && (c === hit || c.contains(hit))];
  });
}"""


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_a_table_shows_what_a_row_is_and_its_verdict_or_cost_on_screen(
    browser: Any, live: tuple[str, Store], looping: str, viewport: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        for view, tbl, name in DECISIVE:
            p.go(view)
            row = p.page.locator(tbl).locator("tbody tr").first
            expect(row).to_be_visible()
            # the page scrolls down to the row; nothing scrolls sideways: that is the reader's job
            row.evaluate("r => window.scrollTo(0, r.getBoundingClientRect().top + scrollY - 200)")
            cells = p.page.evaluate(_SEEN, [row.element_handle(), name])
            for what, (left, right, width, on_top) in zip(("first cell", name), cells, strict=True):
                where = f"{view} {tbl}: {what} at {width}px"
                assert left >= 0 and right <= width, f"{where} is off screen ({left}..{right})"
                assert on_top, f"{where} is covered"


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_costs_show_the_spend_of_a_session_running_now_marked_live(
    browser: Any, live: tuple[str, Store], looping: str, viewport: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        p.go("#/costs")
        row = p.page.locator(f'#cost-live tr[data-session="{looping}"]')
        expect(row).to_contain_text("Fix the flaky test until it passes")
        expect(row.locator("td.num")).to_have_text("$4.93")
        expect(p.page.locator("#cost-live h2")).to_contain_text("live")
        expect(p.page.locator("#cost-groups")).not_to_contain_text("Fix the flaky test")


def test_drivers_name_a_long_running_worker_as_the_cli_does(browser: Any, live: tuple[str, Store]) -> None:
    """The cycle of a daemon with a stale heartbeat and a live process: the console says what
    `octel cycles list` says (one rule, `telemetry.queries.cycle_fleet`)."""
    import httpx
    from playwright.sync_api import expect

    fleet = live[1].fleet
    with open_page(browser, live, LAPTOP) as p:
        items = httpx.get(f"{p.base}/api/cycles").json()["items"]
        (c,) = [c for c in items if c["cycle_id"] == fleet.in_flight_cycle]
        assert (c["long_running"], c["daemon_state"]) == (True, "running_long_worker")
        p.go("#/drivers")
        row = p.page.locator(f'#cycles tr[data-cycle="{fleet.in_flight_cycle}"]')
        expect(row).to_contain_text("long-running worker")


@pytest.mark.parametrize("viewport", [LAPTOP, PHONE], ids=["1366x900", "390x844"])
def test_drivers_window_select_and_note_name_the_same_window(
    browser: Any, live: tuple[str, Store], viewport: dict[str, int]
) -> None:
    """The Drivers tab's default window: the select, the note under the summary and the list
    of cycles all mean the last 90 days (the select once said "any time")."""
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        requests: list[str] = []
        p.page.on("request", lambda r: requests.append(r.url) if "/api/cycles?" in r.url else None)
        p.go("#/drivers")
        select = p.page.locator("#f-since")
        expect(select.locator("option:checked")).to_have_text("last 90 days")
        expect(p.page.locator("#per-driver")).to_contain_text("Window: last 90 days")
        assert select.locator("option", has_text="any time").count() == 0
        assert requests and all("since=90d" in u for u in requests), requests
