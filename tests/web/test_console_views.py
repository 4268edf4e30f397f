"""Every view usable: on a phone (390 by 844) and a desktop (1440 by 900), by keyboard, by screen
reader (axe-core finds nothing serious), with figures that agree with the command line."""

from __future__ import annotations

import itertools
import os
import re
import socket
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_harness import DESKTOP, PHONE, TOKEN, Page, axe_violations, open_page, serve
from console_seed import Store
from sqlalchemy import update

from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex

pytestmark = pytest.mark.chromium

VIEWS = ["#/overview", "#/drivers", "#/sessions", "#/costs"]


def _loaded(p: Page, view: str) -> None:
    from playwright.sync_api import expect

    p.go(view)
    expect(p.page.locator("#updated")).to_contain_text("updated")
    expect(p.page.locator("main .muted", has_text="Loading")).to_have_count(0)


def _session_views(store: Store) -> list[str]:
    return [
        f"#/session/{store.seeded.scenarios['doom_loop']}",
        f"#/session/{store.seeded.scenarios['subagent_tree']}",
    ]


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_every_view_fits_without_sideways_scroll(
    browser: Any, live: tuple[str, Store], viewport: Any
) -> None:
    with open_page(browser, live, viewport) as p:
        for view in [*VIEWS, *_session_views(live[1])]:
            _loaded(p, view)
            width = p.page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], f"{view} is {width}px wide at {viewport['width']}px"
            tops = p.page.locator("nav a").evaluate_all("as => as.map(a => a.getBoundingClientRect().top)")
            assert len(set(tops)) == 1, f"the navigation wraps on {view}: {tops}"


def test_a_wide_table_scrolls_in_its_own_box_on_a_phone(phone: Page, shots: Path) -> None:
    _loaded(phone, "#/drivers")
    phone.shot("drivers-phone.png", shots)
    table = phone.page.locator("#cycles table.grid")
    box = table.evaluate("t => [t.scrollWidth, t.clientWidth, getComputedStyle(t).overflowX]")
    assert box[0] > box[1] and box[2] == "auto"  # wider than the phone, and scrolls itself
    # ... rather than squeezing its cells to a letter a line
    heights = phone.page.locator("#cycles tbody tr").evaluate_all("rs => rs.map(r => r.offsetHeight)")
    assert max(heights) < 60, heights
    assert phone.page.locator("#cycles tbody td").first.evaluate("c => c.offsetWidth") > 100


@pytest.mark.parametrize("view", VIEWS)
def test_axe_finds_nothing_serious(ui: Page, view: str) -> None:
    _loaded(ui, view)
    assert axe_violations(ui.page) == []


def test_axe_finds_nothing_serious_on_a_session_and_when_offline(
    browser: Any, live: tuple[str, Store]
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, live, PHONE) as p:
        _loaded(p, _session_views(live[1])[0])
        assert axe_violations(p.page) == []
    settings = live[1].settings
    with (
        open_page(browser, live, DESKTOP) as p,
        serve(settings, settings.data_dir / "offline.log") as (base, proc),
    ):
        p.page.goto(f"{base}/#/sessions")
        expect(p.page.locator("#sessions tbody tr").first).to_be_visible()
        os.killpg(proc.pid, 15)
        proc.wait(10)
        p.page.keyboard.press("r")
        expect(p.page.locator("#banner")).to_be_visible()
        assert p.page.locator("main").evaluate("m => getComputedStyle(m).opacity") == "1"
        assert axe_violations(p.page) == []  # color-contrast included
        p.errors.clear()  # the dead server's refused connections


def test_skip_link_focuses_the_content_without_leaving_the_view(ui: Page) -> None:
    from playwright.sync_api import expect

    _loaded(ui, "#/sessions")
    ui.page.keyboard.press("Tab")
    expect(ui.page.locator("a.skip")).to_be_focused()
    ui.page.keyboard.press("Enter")
    expect(ui.page.locator("main")).to_be_focused()
    assert ui.page.url.endswith("#/sessions")
    expect(ui.page.locator("main h1")).to_have_text("Sessions")


def test_focus_stays_on_its_row_across_a_refresh(ui: Page) -> None:
    from playwright.sync_api import expect

    _loaded(ui, "#/sessions")
    for _ in range(3):
        ui.page.keyboard.press("j")
    rows = ui.page.locator("main tbody tr")  # the live table's rows come first, then the archived
    third = rows.nth(2)
    expect(third).to_be_focused()
    href = third.get_attribute("data-href")
    assert href
    ui.page.keyboard.press("r")
    expect(ui.page.locator("#updated")).to_contain_text("updated")
    ui.page.wait_for_timeout(300)
    assert ui.page.evaluate("document.activeElement.getAttribute('data-href')") == href


def test_a_focused_row_is_clearly_marked_and_not_under_the_sticky_header(ui: Page) -> None:
    _loaded(ui, "#/sessions")
    rows = ui.page.locator("#sessions tbody tr")
    ui.page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    rows.first.focus()
    style = rows.first.evaluate("r => [getComputedStyle(r).outlineStyle, getComputedStyle(r).outlineWidth]")
    assert style[0] == "solid" and float(style[1].rstrip("px")) >= 2
    header = ui.page.locator("header.top").evaluate("h => h.getBoundingClientRect().bottom")
    head_row = ui.page.locator("#sessions thead").evaluate("h => h.getBoundingClientRect().height")
    top = rows.first.evaluate("r => r.getBoundingClientRect().top")
    assert top >= header + head_row - 1, (top, header, head_row)


def test_one_tab_stop_per_row(ui: Page) -> None:
    _loaded(ui, "#/sessions")
    rows = ui.page.locator("#sessions tbody tr")
    n = rows.count()
    assert n > 3
    stops = ui.page.locator("#sessions tbody").evaluate(
        "b => [...b.querySelectorAll('a, button, [tabindex]')].filter(e => e.tabIndex >= 0).length"
    )
    assert stops == n


def test_the_focus_moves_to_the_new_view(ui: Page) -> None:
    from playwright.sync_api import expect

    _loaded(ui, "#/overview")
    ui.page.keyboard.press("3")
    expect(ui.page.locator("main h1")).to_be_focused()
    expect(ui.page.locator("main h1")).to_have_text("Sessions")
    ui.page.keyboard.press("4")
    expect(ui.page.locator("main h1")).to_be_focused()
    expect(ui.page.locator("main h1")).to_have_text("Costs")


def test_the_live_region_announces_a_daemon_down_and_a_new_stuck_session_not_the_clock(ui: Page) -> None:
    from playwright.sync_api import expect

    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        beat = {"driver": "announce-me", "host": socket.gethostname(), "pid": worker.pid}
        r = httpx.post(f"{ui.base}/api/v1/heartbeat", json=beat, headers={"Authorization": f"Bearer {TOKEN}"})
        assert r.status_code == 200
        _loaded(ui, "#/sessions")
        ui.page.wait_for_timeout(1500)  # the first look learns what is already down
        worker.kill()
        worker.wait()
        region = ui.page.locator("#announce")
        expect(region).to_contain_text("Daemon announce-me on", timeout=25_000)
        expect(region).to_contain_text("is down")
        assert "triage" not in region.inner_text()  # already down when the page opened
    finally:
        worker.kill()
        worker.wait()
    # a session that turns out stuck after the page opened is announced once, by its title
    healthy = next(
        s for s, f in ui.store.seeded.sessions.items() if f["verdict"] == "healthy" and not f["depth"]
    )
    engine = make_engine(ui.store.settings.db_url)
    try:
        with session_scope(engine) as db:
            db.exec(update(SessionIndex).where(SessionIndex.session_id == healthy).values(verdict="stuck"))  # type: ignore[call-overload]
        expect(region).to_contain_text(
            "New stuck session: " + ui.store.seeded.sessions[healthy]["title"], timeout=25_000
        )
    finally:
        with session_scope(engine) as db:
            db.exec(update(SessionIndex).where(SessionIndex.session_id == healthy).values(verdict="healthy"))  # type: ignore[call-overload]
        engine.dispose()
    live_regions = ui.page.locator("[aria-live], [role=status], [role=alert]")
    for i in range(live_regions.count()):
        assert not re.search(r"\d\d:\d\d:\d\d", live_regions.nth(i).inner_text())


def test_overview_says_the_worst_state_with_counts_and_the_badge_keeps_its_distance(ui: Page) -> None:
    from playwright.sync_api import expect

    _loaded(ui, "#/overview")
    status = ui.page.locator("#fleet-status")
    expect(status).to_contain_text("Fleet: down")
    expect(status).to_contain_text(re.compile(r"\b\d+ down\b"))
    expect(status).to_contain_text("cycle(s) in flight")
    tile = ui.page.locator(f'#daemons .tile[data-driver="{ui.store.fleet.long_worker_driver}"]')
    # the badge never touches the daemon's name: apart on one line, or on a line of its own
    gap_js = (
        "h => { const p = h.querySelector('.pill').getBoundingClientRect(), s = h.querySelector('strong')"
        ".getBoundingClientRect(); return p.top >= s.bottom ? 99 : p.left - s.right; }"
    )
    assert tile.locator("header").evaluate(gap_js) >= 6
    ui.page.set_viewport_size(PHONE)
    assert tile.locator("header").evaluate(gap_js) >= 6


def test_session_page_shows_its_cycle_sentences_and_one_numbering(ui: Page) -> None:
    from playwright.sync_api import expect

    sid = ui.store.seeded.scenarios["doom_loop"]
    _loaded(ui, f"#/session/{sid}")
    cycle = ui.page.locator("#session-cycle")
    expect(cycle).to_contain_text("cyc-doom_loop")
    expect(cycle).to_contain_text("driver review")
    finding = ui.page.locator("#findings .finding.stuck").first
    sentence = finding.locator(".sentence").inner_text()
    assert re.search(
        r"ran \d+ times in a row with the same input, from turn \d+ \(message \d+\)\.$", sentence
    )
    labels = finding.locator(".ev a").all_inner_texts()
    assert labels and all(re.fullmatch(r"turn \d+ · \w+", x) for x in labels), labels
    first_turn = ui.page.locator("#turns tbody tr").first.locator("td")
    assert first_turn.nth(0).inner_text().startswith("1")
    msg = int(first_turn.nth(1).inner_text())
    assert msg >= 2  # the first message is the user's
    head = ui.page.locator(f"#timeline article.msg:nth-child({msg}) .msg-head").first
    expect(ui.page.locator("#timeline .msg-head").nth(msg - 1)).to_contain_text(f"message {msg}")
    assert head.count() <= 1
    tokens = ui.page.locator("#timeline .tokens").first.inner_text()
    assert re.fullmatch(
        r"tokens: in [\d,]+ · out [\d,]+ · reasoning [\d,]+ · cache read [\d,]+ · cache write [\d,]+", tokens
    )


def test_money_reads_the_same_in_the_console_and_the_cli(ui: Page) -> None:
    from cli.tables import money

    _loaded(ui, "#/overview")
    values = [0, 0.0079, 0.02, 0.5, 1, 12.5, 1234.5678]
    got = ui.page.evaluate(
        "async (vs) => { const u = await import('./static/util.js'); return vs.map(u.usd); }", values
    )
    assert got == [money(v) for v in values]
    assert got[1] == "$0.0079"


def test_costs_one_row_per_day_a_stacked_chart_and_claude_runs_ranked(ui: Page) -> None:
    from playwright.sync_api import expect

    _loaded(ui, "#/costs")
    days = ui.page.locator("#by-day tbody tr")
    expect(days.first).to_be_visible()
    # the seed spreads its runs over the two hours before now: one UTC day, or two just after midnight
    texts = days.all_inner_texts()
    assert len(texts) == len({t.split()[0] for t in texts}) <= 2, texts  # one row per day
    if datetime.now(UTC).hour >= 3:
        assert len(texts) == 1, texts
    assert "OpenCode" in " ".join(texts) and "Claude Code" in " ".join(texts), texts
    bars = ui.page.locator("#spend-chart svg rect.spend")
    assert bars.count() >= 2  # several agents stacked on the one day
    boxes = bars.evaluate_all("rs => rs.map(r => { const b = r.getBBox(); return [b.x, b.y, b.height]; })")
    stacks: dict[float, list[tuple[float, float]]] = {}
    for x, y, h in boxes:
        stacks.setdefault(x, []).append((y, h))
    for stack in stacks.values():
        stack.sort()
        for (y, h), (y2, _) in itertools.pairwise(stack):
            assert abs(y + h - y2) < 0.01, stack  # each part sits on the one below
    tallest = max(sum(h for _, h in stack) for stack in stacks.values())
    assert abs(tallest - 150) < 0.5  # the most expensive day fills the plot's height
    days = ui.page.locator("#spend-chart svg text.axis", has_text=re.compile(r"^\d\d-\d\d$"))
    assert days.count() >= 7  # every day of the 7-day window has its place, spend or not
    assert ui.page.evaluate("[...document.scripts].every(s => !s.src || s.src.startsWith(location.origin))")
    run = ui.page.locator("#top-sessions tbody tr", has_text="fix-flaky-test")
    expect(run).to_contain_text("Claude CLI")
    expect(run).to_contain_text("$0.4213")
    expect(ui.page.locator("#top-trees thead")).to_contain_text("sessions in tree")
    ui.page.select_option("#f-stack", "model")
    expect(ui.page.locator("#spend-chart figcaption")).to_contain_text("stacked by model")


def test_a_refresh_of_an_unchanged_view_re_downloads_nothing(ui: Page) -> None:
    """The Sessions page revalidates with its ETag: the server answers 304, no body crosses."""
    from playwright.sync_api import expect

    _loaded(ui, "#/sessions")
    seen: list[Any] = []
    ui.page.on("requestfinished", lambda r: seen.append(r) if "/api/sessions?" in r.url else None)
    ui.page.keyboard.press("r")
    expect(ui.page.locator("#sessions tbody tr").first).to_be_visible()
    ui.page.wait_for_timeout(1000)
    assert seen, "the refresh asked for the page again"
    last = seen[-1]
    assert last.all_headers().get("if-none-match"), "the browser revalidates with the ETag"
    assert last.sizes()["responseBodySize"] == 0, last.sizes()
