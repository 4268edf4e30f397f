"""The console: one shell page and its static JS and CSS (no build step, nothing from a CDN).

Every view is drawn in the browser from the JSON API, so a script sees exactly what a person
sees; the page itself carries only the settings the JS needs to start.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from web.deps import SettingsDep

__all__ = ["STATIC_DIR", "TEMPLATE_DIR", "router"]

_HERE = Path(__file__).parent
STATIC_DIR = _HERE / "static"
TEMPLATE_DIR = _HERE / "templates"
_REFRESH_SECONDS = 10

router = APIRouter(include_in_schema=False)
router.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
_templates = Jinja2Templates(directory=TEMPLATE_DIR)


@router.get("/", response_class=HTMLResponse)
def shell(request: Request, settings: SettingsDep) -> HTMLResponse:
    """The shell page; the view itself lives in the URL hash (`#/sessions?agent=build`)."""
    return _templates.TemplateResponse(
        request,
        "console.html",
        {
            "refresh_seconds": _REFRESH_SECONDS,
            "long_worker_seconds": settings.long_worker_seconds,
        },
    )


@router.get("/console")
def console_alias() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)
