"""The console: one shell page and its static JS and CSS (no build step, nothing from a CDN).

Every view is drawn in the browser from the JSON API, so a script sees exactly what a person
sees; the page itself carries only the settings the JS needs to start.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from web.deps import SettingsDep

__all__ = ["STATIC_DIR", "TEMPLATE_DIR", "router"]

_HERE = Path(__file__).parent
STATIC_DIR = _HERE / "static"
TEMPLATE_DIR = _HERE / "templates"
_REFRESH_SECONDS = 10
# The page shows text from archives (tool output, prompts): it is only ever set as text, and
# the policy makes sure nothing else could run or load from elsewhere if that ever slipped.
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


class _Static(StaticFiles):
    """Static files that every browser revalidates (ETag / Last-Modified, then a 304): the file
    names carry no version, so a cached copy must never outlive an upgrade of octel."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = "no-cache"
        return response


router = APIRouter(include_in_schema=False)
router.mount("/static", _Static(directory=STATIC_DIR), name="static")
_templates = Jinja2Templates(directory=TEMPLATE_DIR)


@router.get("/", response_class=HTMLResponse)
def shell(request: Request, settings: SettingsDep) -> Response:
    """The shell page; the view itself lives in the URL hash (`#/sessions?agent=build`)."""
    response = _templates.TemplateResponse(
        request,
        "console.html",
        {
            "refresh_seconds": _REFRESH_SECONDS,
            "long_worker_seconds": settings.long_worker_seconds,
        },
    )
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@router.get("/console")
def console_alias() -> RedirectResponse:
    return RedirectResponse("/", status_code=307)
