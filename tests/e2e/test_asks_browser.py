"""The live session page in Chromium, at 1366x900 and 390x844, over a real `opencode serve`
followed by a watcher: a session waiting on a `bash` ask shows its tool call "waiting on ask"
(not running) and the "Allow once" / "Reject" buttons inside the viewport; a wrong token is
refused on the page and nothing is sent; the write token answers and the session goes on
(allow) or its tool is refused (reject)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from driver import idle, start
from fakellm import FakeLLM
from opencode_harness import OpenCode
from realparts import require
from test_asks_real_opencode import ASK, READ, TOKEN, script, served, tools, waiting  # noqa: F401

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.opencode, pytest.mark.chromium]

SIZES = [({"width": 1366, "height": 900}, "allow"), ({"width": 390, "height": 844}, "reject")]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


def inside(box: dict[str, float] | None, viewport: dict[str, int]) -> bool:
    return box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]


@pytest.mark.parametrize(("viewport", "decision"), SIZES, ids=["1366x900", "390x844"])
def test_the_ask_is_answered_from_the_live_page(
    opencode: OpenCode,
    fake_llm: FakeLLM,
    served: Any,  # noqa: F811 (the fixture imported above)
    browser: Any,
    viewport: dict[str, int],
    decision: str,
) -> None:
    from playwright.sync_api import expect

    _, base = served
    fake_llm.load(script(f"Answer it {decision}"))
    ctx = browser.new_context(viewport=viewport, color_scheme="light")
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    expect.set_options(timeout=30_000)
    try:
        with (
            httpx.Client(base_url=opencode.url, timeout=15) as http,
            httpx.Client(base_url=base, timeout=30, headers={"Authorization": f"Bearer {READ}"}) as octel,
        ):
            root = start(http, "Run it.", ASK)
            rid = waiting(octel, root)["ask"]["request_id"]
            # the console login, as the form gives it
            login = httpx.post(f"{base}/login", data={"token": READ}, follow_redirects=False)
            assert login.status_code == 303, login.text
            cookie = login.cookies["octel_console"]
            ctx.add_cookies([{"name": "octel_console", "value": cookie, "url": base}])
            page.goto(f"{base}/#/session/{root}")
            expect(page.locator(".ask-alert")).to_contain_text("bash ask")
            expect(page.locator(".pill.waiting-ask")).to_have_text("waiting on ask")
            assert page.locator("details.part.tool .pill.inflight").count() == 0  # never "running"
            allow, reject = page.locator("#ask-allow"), page.locator("#ask-reject")
            expect(allow).to_have_text("Allow once")
            expect(reject).to_have_text("Reject")
            for button in (allow, reject, page.locator("#ask-token")):
                assert inside(button.bounding_box(), viewport), "a control of the answer is off the screen"
            page.fill("#ask-token", READ)  # the read token cannot answer
            page.locator(f"#ask-{decision}").click()
            expect(page.locator(".ask-status")).to_contain_text("not the write token")
            assert [p["id"] for p in http.get("/permission").json()] == [rid]
            page.fill("#ask-token", TOKEN)
            page.locator(f"#ask-{decision}").click()
            said = "Allowed once" if decision == "allow" else "Rejected"
            expect(page.locator(".ask-status")).to_contain_text(f"{said} ({rid})")
            idle(http, root)
            state = tools(http, root)[-1]["state"]
            assert state["status"] == ("completed" if decision == "allow" else "error")
            expect(page.locator(".ask-alert")).to_have_count(0)  # the page moved on with the watcher
            actions = octel.get("/api/v1/actions", params={"session_id": root}).json()["items"]
            assert [(a["action"], a["outcome"]) for a in actions] == [(f"{decision}_ask", "done")]
        assert errors == []
    finally:
        ctx.close()
