"""The shell page and its static files: served, self-contained (no CDN), every module present."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from telemetry.settings import Settings
from web.app import create_app
from web.console import STATIC_DIR


@pytest.fixture
def bare(tmp_path: Path) -> TestClient:
    settings = Settings(data_dir=tmp_path, ingest_token="test-token-0123456789", _env_file=None)
    return TestClient(create_app(settings))


def test_shell_page_loads_its_own_assets_only(bare: TestClient) -> None:
    with bare as c:
        r = c.get("/")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        html = r.text
        assert 'src="static/app.js"' in html and 'href="static/console.css"' in html
        for view in ("overview", "drivers", "sessions", "costs"):
            assert f'href="#/{view}"' in html
        assert not re.search(r"(src|href)=\"(https?:)?//", html), "no asset from another origin"
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "default-src 'none'" in csp
        assert "<script>" not in html and " style=" not in html  # nothing inline for the CSP to block
        assert c.get("/console", follow_redirects=False).headers["location"] == "/"


def test_every_imported_module_is_served(bare: TestClient) -> None:
    """Follow the ES module imports from app.js: a missing or misnamed file breaks the page."""
    with bare as c:
        todo, seen = ["app.js"], set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            r = c.get(f"/static/{name}")
            assert r.status_code == 200, name
            assert "javascript" in r.headers["content-type"]
            # The SVG namespace is a name the DOM needs, never fetched; any other URL would be.
            code = r.text.replace('"http://www.w3.org/2000/svg"', "")
            assert "http://" not in code and "https://" not in code, name
            todo += re.findall(r'from "\./([\w.-]+\.js)"', r.text)
        on_disk = {p.name for p in STATIC_DIR.glob("*.js")}
        assert seen == on_disk
        assert c.get("/static/console.css").status_code == 200


def test_static_files_stay_inside_their_folder(bare: TestClient) -> None:
    with bare as c:
        for path in ("/static/../console.py", "/static/%2e%2e/console.py", "/static/..%2fapp.py"):
            assert c.get(path).status_code == 404, path


def test_every_console_endpoint_is_documented() -> None:
    from web import api_archived, api_costs, api_sessions

    doc = (Path(__file__).resolve().parents[2] / "docs" / "console.md").read_text()
    for router in (api_archived.router, api_costs.router, api_sessions.router):
        for route in router.routes:
            path = getattr(route, "path", "").replace("{session_id}", "{id}")
            assert f"`GET {path}" in doc, f"docs/console.md does not describe GET {path}"
