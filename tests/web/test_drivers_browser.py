"""The Drivers view in real Chromium at 1366x900 and 390x844: a cycle's session is named by its
title (as text, cut with an ellipsis on one line, the id in its tooltip and link), and the
"Cycle id" box finds one cycle by its id, however old, or says no cycle has it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from browser_harness import PHONE, TOKEN, open_page
from console_seed import Store

from telemetry.store.db import make_engine, session_scope
from telemetry.store.live_models import LiveSession
from telemetry.timeutil import utcnow

pytestmark = pytest.mark.chromium

LAPTOP = {"width": 1366, "height": 900}
SIZES = [LAPTOP, PHONE]
IDS = ["1366x900", "390x844"]

SID = "ses_driverslong000000000000001"
TITLE = "<b>Refactor</b> the scheduler so that every queue drains before the next window opens, then say why"
OLD = "cyc-a-year-ago"


@pytest.fixture(scope="module")
def cycles(live: tuple[str, Store]) -> dict[str, str]:
    """A cycle whose session runs now with a long title (markup in it), and one begun a year ago."""
    base, store = live
    now = utcnow()
    engine = make_engine(store.settings.db_url)
    try:
        with session_scope(engine) as db:
            at = {"state_since": now, "first_seen_at": now, "updated_at": now}
            db.add(
                LiveSession(server="http://127.0.0.1:4096", session_id=SID, title=TITLE, state="busy", **at)
            )
    finally:
        engine.dispose()
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for cid, started, sid in (
        ("cyc-long-title", now - timedelta(minutes=1), SID),
        (OLD, now - timedelta(days=365), None),
    ):
        body = {"cycle_id": cid, "driver": "implement", "started_at": started.isoformat(), "session_id": sid}
        r = httpx.post(f"{base}/api/v1/cycles/begin", json=body, headers=auth)
        assert r.status_code == 201, r.text
    archived = next(
        c
        for c in httpx.get(f"{base}/api/cycles").json()["items"]
        if c["cycle_id"].startswith("cyc-") and c["session_title"] and c["session_id"] != SID
    )
    return {
        "long": "cyc-long-title",
        "archived": archived["cycle_id"],
        "archived_sid": archived["session_id"],
        "archived_title": archived["session_title"],
    }


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_the_session_column_shows_titles_with_the_id_in_the_tooltip(
    browser: Any, live: tuple[str, Store], cycles: dict[str, str], viewport: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        p.go("#/drivers")
        link = p.page.locator(f'#cycles tr[data-cycle="{cycles["archived"]}"] td.session a')
        expect(link).to_have_text(cycles["archived_title"])
        expect(link).to_have_attribute("title", cycles["archived_sid"])
        link_long = p.page.locator(f'#cycles tr[data-cycle="{cycles["long"]}"] td.session a')
        expect(link_long).to_have_text(TITLE)  # markup is text, never parsed
        expect(link_long).to_have_attribute("title", SID)
        assert p.page.locator("#cycles td.session b").count() == 0
        # one line, cut with an ellipsis: the box is narrower than the title it holds
        box = link_long.evaluate(
            "a => [a.scrollWidth, a.clientWidth, getComputedStyle(a).textOverflow,"
            " a.getClientRects().length, a.getBoundingClientRect().height]"
        )
        scroll, client, overflow, rects, height = box
        assert overflow == "ellipsis" and scroll > client and rects == 1, box
        line = link_long.evaluate("a => parseFloat(getComputedStyle(a).lineHeight) || 20")
        assert height <= line * 1.5, box
        link_long.click()
        expect(p.page).to_have_url(f"{p.base}/#/session/{SID}")


@pytest.mark.parametrize("viewport", SIZES, ids=IDS)
def test_the_cycle_box_finds_a_cycle_by_its_id(
    browser: Any, live: tuple[str, Store], cycles: dict[str, str], viewport: dict[str, int]
) -> None:
    from playwright.sync_api import expect

    with open_page(browser, live, viewport) as p:
        p.go("#/drivers")
        expect(p.page.locator("#cycles tbody tr").first).to_be_visible()
        assert p.page.locator(f'#cycles tr[data-cycle="{OLD}"]').count() == 0  # older than 90 days
        box = p.page.locator("#f-cycle")
        expect(box).to_be_visible()
        box.fill(OLD)
        box.press("Enter")
        rows = p.page.locator("#cycles tbody tr")
        expect(rows).to_have_count(1)
        expect(rows.first).to_have_attribute("data-cycle", OLD)
        assert "cycle=" + OLD in p.page.url  # a link to it can be shared
        box.fill("cyc-no-such-cycle")
        box.press("Enter")
        expect(p.page.locator("#cycles")).to_contain_text("No cycle has the id “cyc-no-such-cycle”")
        p.go(f"#/drivers?cycle={cycles['archived']}")
        expect(p.page.locator("#cycles tbody tr")).to_have_count(1)
        expect(p.page.locator("#f-cycle")).to_have_value(cycles["archived"])
