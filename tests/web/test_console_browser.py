"""The console in real Chromium against a live `uvicorn web.app:create_app` on loopback.

The store holds the captured OpenCode runs (archived and indexed by the real archiver), a small
fleet with a long-running worker (a live child process, a stale heartbeat, a cycle in flight)
and a daemon whose process is gone. Screenshots go to $OCTEL_SCREENSHOT_DIR when set (the
docs/screenshots/ images are made that way), else to a temporary folder.
"""

from __future__ import annotations

import os
import re
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_harness import TOKEN, TRACE_URL, WAIT_MS, Page, beat, serve
from console_seed import HOSTILE_TEXT, HOSTILE_TITLE, Store, archive_hostile, archive_with_failures

from telemetry.otel_export.spans import trace_id

pytestmark = pytest.mark.chromium


def test_overview_tiles_outcomes_and_stuck_sessions(ui: Page, shots: Path) -> None:
    from playwright.sync_api import expect

    fleet = ui.store.fleet
    beat(ui.base, fleet.ok_driver, os.getpid())
    ui.go("#/overview")
    long = ui.page.locator(f'#daemons .tile[data-driver="{fleet.long_worker_driver}"]')
    expect(long).to_have_attribute("data-state", "running_long_worker")
    expect(long).to_contain_text(fleet.in_flight_cycle)
    expect(long.locator(".pill.inflight")).to_have_text("in flight")
    expect(long).to_contain_text(re.compile(r"for 4\dm"))
    assert long.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"
    ok = ui.page.locator(f'#daemons .tile[data-driver="{fleet.ok_driver}"]')
    expect(ok).to_have_attribute("data-state", "ok")
    assert ok.evaluate("e => getComputedStyle(e).borderTopStyle") == "solid"
    expect(ui.page.locator(f'#daemons .tile[data-driver="{fleet.down_driver}"]')).to_have_attribute(
        "data-state", "down"
    )
    outcomes = ui.page.locator("#outcomes tbody tr")
    expect(outcomes).to_have_count(2)
    expect(outcomes.first).to_contain_text("in flight: 1")
    stuck = sorted(s["title"] for s in ui.store.seeded.sessions.values() if s["verdict"] == "stuck")
    rows = ui.page.locator("#stuck tbody tr")
    expect(rows).to_have_count(len(stuck))
    assert sorted(rows.locator("td:first-child a").all_inner_texts()) == stuck
    ui.shot("overview.png", shots)


def test_drivers_in_flight_pill_and_filters(ui: Page, shots: Path) -> None:
    from playwright.sync_api import expect

    ui.go("#/drivers")
    flight = ui.page.locator(f'#cycles tr[data-cycle="{ui.store.fleet.in_flight_cycle}"]')
    expect(flight).to_have_class(re.compile(r"\binflight\b"))
    expect(flight.locator(".pill.inflight")).to_have_text("in flight")
    expect(flight).to_contain_text("so far")
    total = ui.page.locator("#cycles tbody tr").count()
    ui.shot("drivers.png", shots)
    # filters narrow, live, and stay in the URL
    ui.page.fill("#f-driver", "implement")
    ui.page.keyboard.press("Enter")
    expect(ui.page).to_have_url(re.compile(r"driver=implement"))
    rows = ui.page.locator("#cycles tbody tr")
    expect(rows).not_to_have_count(total)
    assert set(rows.locator("td:nth-child(2)").all_inner_texts()) == {"implement"}
    ui.page.select_option("#f-in_flight", "1")
    expect(rows).to_have_count(1)
    ui.page.reload()
    expect(ui.page.locator("#f-driver")).to_have_value("implement")
    expect(ui.page.locator("#f-in_flight")).to_have_value("1")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-cycle", ui.store.fleet.in_flight_cycle)


def test_sessions_search_and_verdict_filter(ui: Page, shots: Path) -> None:
    from playwright.sync_api import expect

    ui.go("#/sessions")
    rows = ui.page.locator("#sessions tbody tr")
    expect(rows).to_have_count(len(ui.store.seeded.sessions))
    ui.shot("sessions.png", shots)
    ui.page.keyboard.press("/")  # the search box takes the focus
    expect(ui.page.locator("#f-q")).to_be_focused()
    ui.page.keyboard.type("readme")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Check the README")
    ui.page.click("form.filters button")  # Clear
    expect(rows).to_have_count(len(ui.store.seeded.sessions))
    rows.first.locator("td:nth-child(3) a").click()  # a label narrows to its run
    expect(ui.page.locator("#f-label")).to_have_value(re.compile(r"\w"))
    label = ui.page.locator("#f-label").input_value()
    runs = [s for s in ui.store.seeded.sessions.values() if s["scenario"] == label]
    expect(rows).to_have_count(len(runs))
    ui.page.click("form.filters button")
    ui.page.select_option("#f-verdict", "stuck")
    stuck = [s for s in ui.store.seeded.sessions.values() if s["verdict"] == "stuck"]
    expect(rows).to_have_count(len(stuck))
    assert set(rows.locator(".pill.stuck").all_inner_texts()) == {"stuck"}
    expect(ui.page).to_have_url(re.compile(r"verdict=stuck"))


def test_session_opens_as_its_tree_with_turns_and_timeline(ui: Page, shots: Path) -> None:
    from playwright.sync_api import expect

    root = ui.store.seeded.scenarios["subagent_tree"]
    ui.go("#/sessions?q=Investigate")
    ui.page.locator("#sessions tbody tr").first.click()
    expect(ui.page).to_have_url(re.compile(f"#/session/{root}"))
    tree = ui.page.locator("#tree ul.tree")
    expect(tree.locator(":scope > li > ul > li > ul > li")).to_have_count(1)  # root > child > grandchild
    expect(tree.locator(".here")).to_have_text("Investigate with subagents")
    expect(tree).to_contain_text("@nester")
    expect(tree).to_contain_text("@general")
    turns = ui.page.locator("#turns tbody tr")
    expect(turns).to_have_count(2)
    # the trace the tree is exported as, in the tracing tool the template names
    link = ui.page.locator("#session-head a#trace-link")
    expect(link).to_have_attribute("href", TRACE_URL.format(trace_id=f"{trace_id(root):032x}"))
    # The cache-hit ratio is the server's figure, not one the page works out again.
    ratio = httpx.get(f"{ui.base}/api/sessions/{root}").json()["session"]["cache_hit_ratio"]
    hit = ui.page.locator(".fact", has_text="cache hit").locator(".v")
    expect(hit).to_have_text("\u2013" if ratio is None else f"{ratio * 100:.1f}%")
    tools = ui.page.locator("#timeline details.tool")
    expect(tools.first).to_be_visible()
    assert tools.first.get_attribute("open") is None  # folded until asked
    tools.first.locator("summary").click()
    expect(tools.first.locator("pre").first).to_be_visible()
    ui.shot("session.png", shots)
    # a subagent opens as its own subtree
    tree.locator("a", has_text="Explore level one").click()
    expect(ui.page.locator("#tree .here")).to_contain_text("Explore level one")
    expect(ui.page.locator("#tree")).to_contain_text("parent")


def test_finding_evidence_links_to_the_exact_part(ui: Page) -> None:
    from playwright.sync_api import expect

    sid = ui.store.seeded.scenarios["doom_loop"]
    ui.go(f"#/session/{sid}")
    finding = ui.page.locator("#findings .finding.stuck")
    expect(finding).to_contain_text("doom_loop")
    link = finding.locator(".ev a").first
    target = (link.get_attribute("href") or "").split("at=")[1]
    link.click()
    part = ui.page.locator(f'[id="p-{target}"]')
    expect(part).to_have_class(re.compile(r"\btarget\b"))
    expect(part).to_have_attribute("open", "")


def test_in_flight_turn_and_redactions(ui: Page) -> None:
    from playwright.sync_api import expect

    ui.go(f"#/session/{ui.store.seeded.scenarios['aborted']}")
    last = ui.page.locator("#turns tbody tr").last
    expect(last).to_have_class(re.compile(r"\binflight\b"))
    expect(last.locator(".pill.inflight")).to_have_text("in flight")
    expect(ui.page.locator("#timeline article.msg.inflight")).to_have_count(1)
    ui.go(f"#/session/{ui.store.seeded.scenarios['secrets']}")
    marks = ui.page.locator("#timeline mark.redacted")
    expect(marks.first).to_be_visible()
    assert "redacted: github" in marks.all_inner_texts()
    expect(ui.page.locator("#redactions")).to_contain_text("github \u00d7")
    assert "ghp_FAKE" not in ui.page.locator("#timeline").inner_text()


def test_costs_breakdowns_and_trees(ui: Page, shots: Path) -> None:
    from playwright.sync_api import expect

    ui.go("#/costs")
    for by in ("agent", "model", "driver", "day"):
        expect(ui.page.locator(f"#by-{by} tbody tr").first).to_be_visible()
    expect(ui.page.locator("#by-driver tbody")).to_contain_text("implement")
    trees = ui.page.locator("#top-trees tbody tr", has_text="Investigate with subagents")
    expect(trees.locator("td").nth(2)).to_have_text("3")
    expect(ui.page.locator("#cost-totals")).to_contain_text("cache hit")
    ui.shot("costs.png", shots)
    ui.page.select_option("#f-since", "24h")
    expect(ui.page).to_have_url(re.compile(r"since=24h"))


def test_keyboard_and_deep_links(ui: Page) -> None:
    from playwright.sync_api import expect

    ui.go("#/overview")
    expect(ui.page.locator("#daemons .tile").first).to_be_visible()
    ui.page.keyboard.press("3")
    expect(ui.page).to_have_url(re.compile(r"#/sessions$"))
    expect(ui.page.locator("#sessions tbody tr").first).to_be_visible()
    ui.page.keyboard.press("j")
    first = ui.page.locator("main tbody tr").first  # the live table's, when sessions run now
    expect(first).to_be_focused()
    ui.page.keyboard.press("Enter")
    expect(ui.page).to_have_url(re.compile(r"#/session/ses_"))
    expect(ui.page.locator("#session-head h1")).to_be_visible()
    ui.go("#/session/ses_does_not_exist")
    expect(ui.page.locator("#no-such-session")).to_have_text("No such session")
    expect(ui.page.locator("main")).to_contain_text("No archived session has the id ses_does_not_exist")
    assert ui.page.locator("#tree, #findings, #turns, #timeline, main h2").count() == 0
    ui.errors.clear()  # the 404 above is logged by the browser as a failed resource load


def test_markup_in_archives_is_shown_as_text(ui: Page) -> None:
    from playwright.sync_api import expect

    sid = archive_hostile(ui.store.settings)
    ui.go("#/sessions?q=Hostile")
    row = ui.page.locator("#sessions tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator("a").first).to_have_text(HOSTILE_TITLE)
    row.first.click()
    expect(ui.page).to_have_url(re.compile(f"#/session/{sid}"))
    expect(ui.page.locator("#timeline .part.text").first).to_have_text(HOSTILE_TEXT)
    assert ui.page.locator("#main img, #main script, #main b").count() == 0
    assert ui.page.evaluate("window.__pwned") is None


def test_an_incomplete_archive_says_what_is_missing(ui: Page) -> None:
    from playwright.sync_api import expect

    seeded = ui.store.seeded
    root = seeded.scenarios["subtask_part"]
    child = next(s for s, f in seeded.sessions.items() if f["scenario"] == "subtask_part" and f["depth"])
    archive_with_failures(ui.store.settings, "subtask_part", frozenset({f"/session/{child}/message"}))
    ui.go(f"#/session/{root}")
    box = ui.page.locator("#walk-errors")
    expect(box).to_contain_text("could not be fetched")
    expect(box).to_contain_text(child)


def test_views_refresh_on_their_own(ui: Page) -> None:
    """A cycle that begins after the page loaded shows up without touching the page."""
    from playwright.sync_api import expect

    ui.go("#/drivers")
    expect(ui.page.locator("#cycles tbody tr").first).to_be_visible()
    r = httpx.post(
        f"{ui.base}/api/v1/cycles/begin",
        json={"cycle_id": "cyc-appears-later", "driver": "hotfix"},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert r.status_code == 201, r.text
    row = ui.page.locator('#cycles tr[data-cycle="cyc-appears-later"]')
    expect(row).to_have_class(re.compile(r"\binflight\b"), timeout=25_000)  # refreshes every 10 s


def test_unreachable_server_shows_a_clear_message(
    live: tuple[str, Store], browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    settings = live[1].settings
    ctx = browser.new_context()
    try:
        page = ctx.new_page()
        with serve(settings, tmp_path / "second.log") as (base, proc):
            page.goto(f"{base}/#/sessions")
            expect(page.locator("#sessions tbody tr").first).to_be_visible(timeout=WAIT_MS)
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(10)
            page.keyboard.press("r")
            banner = page.locator("#banner")
            expect(banner).to_be_visible(timeout=WAIT_MS)
            expect(banner).to_contain_text("unreachable")
            expect(page.locator("#sessions tbody tr").first).to_be_visible()  # last data stays
    finally:
        ctx.close()


def test_a_live_session_page_shows_what_it_does_now_above_its_messages(ui: Page, shots: Path) -> None:
    """The captured subagent tree runs again and its child waits on an ask: its page says so
    first, with the cycle, then its tree and the messages of its last archive."""
    from live_seed import waiting_root
    from playwright.sync_api import expect

    live = httpx.get(f"{ui.base}/api/live", params={"state": "waiting_permission"}).json()["items"]
    child = next(s["session_id"] for s in live if s["root_session_id"] == waiting_root())
    ui.go(f"#/session/{child}")
    now = ui.page.locator("#live-now")
    expect(now.locator(".pill.live-waiting_permission")).to_be_visible()
    expect(now.locator(".ask-alert")).to_contain_text("git push *")
    expect(now.locator(".fact", has_text="cycle").locator("a")).to_have_attribute(
        "href", re.compile(r"#/drivers\?driver=")
    )
    expect(ui.page.locator("#timeline .msg").first).to_be_visible()
    ui.shot("live-session.png", shots)


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_many_open_cycles_of_a_dead_dispatcher_are_counted_on_the_overview(
    browser: Any, live: Any, size: str
) -> None:
    """The newest three get tiles; the rest are one line that links to Drivers, at both sizes."""
    import socket
    import subprocess
    import sys

    from browser_harness import DESKTOP, PHONE, open_page
    from playwright.sync_api import expect

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid no process has now: the dispatcher died
    auth = {"Authorization": f"Bearer {TOKEN}"}
    driver = f"left-{size}"
    ids = [f"{driver}-{i}" for i in range(7)]
    base = live[0]
    # begun weeks ago, so the last 24 hours' outcomes other tests count stay as they are
    began = datetime.now(UTC) - timedelta(days=40)
    for cid in ids:
        begin = {
            "cycle_id": cid,
            "driver": driver,
            "host": socket.gethostname(),
            "pid": gone.pid,
            "started_at": began.isoformat(),
        }
        assert httpx.post(f"{base}/api/v1/cycles/begin", json=begin, headers=auth).status_code == 201
    try:
        viewport, extra = (
            (DESKTOP, {}) if size == "desktop" else (PHONE, {"is_mobile": True, "has_touch": True})
        )
        with open_page(browser, live, viewport, **extra) as p:
            p.go("#/overview")
            expect(p.page.locator(f'#daemons .tile[data-driver="{driver}"]')).to_have_count(3)
            more = p.page.locator(f'#daemons .more-cycles[data-driver="{driver}"]')
            expect(more).to_contain_text(f"4 more open cycle(s) of {driver} with no heartbeat, 4 orphaned")
            box = more.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
            more.get_by_role("link").click()
            expect(p.page).to_have_url(re.compile(rf"#/drivers\?driver={driver}&in_flight=1"))
    finally:
        for cid in ids:
            end = {
                "cycle_id": cid,
                "driver": driver,
                "terminal_state": "aborted",
                "ended_at": (began + timedelta(hours=1)).isoformat(),
            }
            assert httpx.post(f"{base}/api/v1/cycles/finish", json=end, headers=auth).status_code == 200
