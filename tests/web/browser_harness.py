"""The browser harness of the console tests: a live `uvicorn --factory web.app:create_app` on
loopback over a seeded store, headless Chromium through Playwright, a page per test that fails
the test on any browser console error, and axe-core (vendored from npm) to audit a view.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import reaper
from console_seed import Store, build_store
from realparts import free_port, require

from telemetry.settings import Settings

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TOKEN = "test-token-0123456789"
TRACE_URL = "http://127.0.0.1:6006/redirects/traces/{trace_id}"
WAIT_MS = 30_000  # generous: the machine running the suite may be busy


@contextmanager
def serve(settings: Settings, log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`uvicorn --factory web.app:create_app` on a free loopback port, stopped afterwards."""
    port = free_port()
    env = {
        **os.environ,
        "OCTEL_DATA_DIR": str(settings.data_dir),
        "OCTEL_DATABASE_URL": settings.db_url,
        "OCTEL_INGEST_TOKEN": TOKEN,
        "OCTEL_LONG_WORKER_SECONDS": "60",
        "OCTEL_OTEL_TRACE_URL": TRACE_URL,
    }
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "web.app:create_app"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    reaper.adopt(proc.pid, group=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not start: " + log.read_text()
            time.sleep(0.1)
        yield base, proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        reaper.release(proc.pid)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    require(os.access(CHROMIUM, os.X_OK), "Chromium (/usr/bin/chromium)", "apt-get install chromium")
    root = tmp_path_factory.mktemp("console")
    settings = Settings(
        data_dir=root / "data",
        ingest_token=TOKEN,  # type: ignore[arg-type]
        _env_file=None,  # type: ignore[call-arg]
    )
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)"])
    try:
        store = build_store(settings, worker.pid)
        with serve(settings, root / "server.log") as (base, _):
            yield base, store
    finally:
        worker.kill()
        worker.wait()


@pytest.fixture(scope="module")
def browser(live: tuple[str, Store]) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@dataclass
class Page:
    page: Any
    base: str
    store: Store
    errors: list[str] = field(default_factory=list)

    def go(self, hash_: str) -> None:
        self.page.goto(f"{self.base}/{hash_}")

    def shot(self, name: str, shots: Path) -> None:
        self.page.evaluate("window.scrollTo(0, 0)")  # else the sticky header lands mid-picture
        self.page.screenshot(path=str(shots / name), full_page=True)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    d = Path(os.environ.get("OCTEL_SCREENSHOT_DIR") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
AXE = Path(__file__).parent / "vendor" / "axe.min.js"  # npm axe-core, MPL-2.0; never served by octel


@contextmanager
def open_page(
    browser: Any, live: tuple[str, Store], viewport: dict[str, int], **options: Any
) -> Iterator[Page]:
    """A fresh browser context at `viewport`; the test fails if the page logged an error."""
    from playwright.sync_api import expect

    expect.set_options(timeout=WAIT_MS)
    ctx = browser.new_context(viewport=viewport, color_scheme="light", **options)
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    p = Page(page, live[0], live[1])
    page.on(
        "console", lambda m: p.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    page.on("pageerror", lambda e: p.errors.append(f"page error: {e}"))
    try:
        yield p
        assert p.errors == [], "the browser console logged errors"
    finally:
        ctx.close()


@pytest.fixture
def ui(browser: Any, live: tuple[str, Store]) -> Iterator[Page]:
    with open_page(browser, live, DESKTOP) as p:
        yield p


@pytest.fixture
def phone(browser: Any, live: tuple[str, Store]) -> Iterator[Page]:
    with open_page(browser, live, PHONE, is_mobile=True, has_touch=True) as p:
        yield p


WCAG = ("wcag2a", "wcag2aa", "wcag21aa")


def axe_violations(
    page: Any, impacts: tuple[str, ...] = ("serious", "critical"), tags: tuple[str, ...] = WCAG
) -> list[str]:
    """axe-core's findings of the given impact and tags (WCAG 2 A/AA) on the page as it is now."""
    page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate("tags => axe.run(document, {runOnly: {type: 'tag', values: tags}})", list(tags))
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {json.dumps([n['target'] for n in v['nodes']][:3])}"
        for v in result["violations"]
        if v["impact"] in impacts
    ]


def beat(base: str, driver: str, pid: int) -> None:
    """A fresh heartbeat through the ingestion API, as a dispatcher would send it."""
    import socket

    r = httpx.post(
        f"{base}/api/v1/heartbeat",
        json={"driver": driver, "host": socket.gethostname(), "pid": pid},
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert r.status_code == 200, r.text
