"""The Overview's quota tiles in real Chromium at 1366x900 and 390x844: one tile per window of
OCTEL_BUDGETS_FILE with the share the server computed, a forecast before the reset marked, and
nothing spilling past the screen's width on a phone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser_harness import TOKEN, browser, open_page, serve, shots  # noqa: F401
from console_seed import Store, build_store

from telemetry.settings import Settings

pytestmark = pytest.mark.chromium

RULES = """
[[quotas]]
provider = "anthropic"
key_label = "team-a"
limit_usd = 0.5

[[quotas]]
provider = "nobody"
window = "rolling"
hours = 5
limit_tokens = 1000000
"""


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    root = tmp_path_factory.mktemp("quotas")
    rules = root / "rules.toml"
    rules.write_text(RULES)
    settings = Settings(data_dir=root / "data", ingest_token=TOKEN, _env_file=None)  # type: ignore[arg-type, call-arg]
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(900)"])
    os.environ["OCTEL_BUDGETS_FILE"] = str(rules)  # the server started below reads it
    try:
        store = build_store(settings, worker.pid)
        with serve(settings, root / "server.log") as (base, _):
            yield base, store
    finally:
        os.environ.pop("OCTEL_BUDGETS_FILE", None)
        worker.kill()
        worker.wait()


@pytest.mark.parametrize(("width", "height"), [(1366, 900), (390, 844)])
def test_a_tile_per_quota_window(
    browser: Any,  # noqa: F811 (the fixture imported above)
    live: tuple[str, Store],
    shots: Path,  # noqa: F811
    width: int,
    height: int,
) -> None:
    from playwright.sync_api import expect

    api = httpx.get(f"{live[0]}/api/quotas", timeout=10).json()["quotas"]
    assert [q["window"] for q in api] == ["team-a", "rolling 5h"]
    with open_page(browser, live, {"width": width, "height": height}) as ui:
        ui.go("#/overview")
        tiles = ui.page.locator("#quotas .tile")
        expect(tiles).to_have_count(2)
        team = ui.page.locator('#quotas .tile[data-window="team-a"]')
        expect(team.locator(".pill")).to_have_text(f"{api[0]['used_ratio'] * 100:.1f}%")
        # the run-out time moves with the clock: the tile's must be the API's from before the
        # page or from after it, whichever minute the page was drawn in
        expect(team).to_contain_text("runs out on")
        shown = team.inner_text()
        after = httpx.get(f"{live[0]}/api/quotas", timeout=10).json()["quotas"]
        said = {api[0]["forecast"], after[0]["forecast"]}
        assert any(f in shown for f in said), (shown, said)
        rolling = ui.page.locator('#quotas .tile[data-window="rolling 5h"]')
        expect(rolling).to_contain_text("0 tokens of 1,000,000 tokens")
        expect(rolling).to_contain_text("does not run out")
        wide = ui.page.evaluate("document.documentElement.scrollWidth")
        assert wide <= width, f"the page is {wide} px wide on a {width} px screen"
        ui.page.locator("#quotas").screenshot(path=str(shots / f"quotas-{width}.png"))
