"""The console's login form, used only when `OCTEL_READ_TOKEN` is set.

The form posts the read token once; the answer sets an HttpOnly, SameSite=Strict cookie
(`web.login_cookie`: signed, lapsing, revoked by `POST /logout`), which the console's own
requests then carry. Wrong tokens are logged and throttled per client address (429 with
`Retry-After`), and a form posted from another site is refused (403).
"""

from __future__ import annotations

import logging
import math
import time
from html import escape
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from web.app_state import app_state
from web.deps import SettingsDep
from web.guard import COOKIE, cookie_value, cross_site, valid_token

__all__ = ["router"]

log = logging.getLogger("octel")
router = APIRouter(include_in_schema=False)

_CSP = "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>octel · log in</title>
<link rel="stylesheet" href="/static/console.css"></head>
<body><main class="login">
<h1>octel</h1>
<form method="post" action="/login">
<label>Read token <input type="password" name="token" autocomplete="current-password" autofocus></label>
<button type="submit">Log in</button>
</form>
<p class="error">{message}</p>
</main></body></html>
"""


def _page(message: str = "", status: int = 200, headers: dict[str, str] | None = None) -> HTMLResponse:
    response = HTMLResponse(_PAGE.format(message=escape(message)), status, headers=headers)
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["Cache-Control"] = "no-store"
    return response


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


@router.get("/login")
def login_form(settings: SettingsDep) -> Response:
    if settings.read_token is None:
        return RedirectResponse("/", status_code=303)
    return _page()


@router.post("/login")
async def login(request: Request, settings: SettingsDep) -> Response:
    """Check the posted token; on success set the cookie and go to the console."""
    if settings.read_token is None:
        return RedirectResponse("/", status_code=303)
    if cross_site(request.headers):
        return _page("Log in from this server's own page.", 403)
    state = app_state(request.app)
    throttle, logins = state.login_throttle, state.logins
    address, now = _address(request), time.time()
    if (wait := throttle.wait(address, now)) > 0:
        retry = str(math.ceil(wait))
        return _page(f"Too many wrong tokens; try again in {retry} s.", 429, {"Retry-After": retry})
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    if not valid_token((form.get("token") or [""])[0], settings.read_token.get_secret_value()):
        failures = throttle.failed(address, now)
        log.warning("octel: wrong read token at the console login from %s (%d in a row)", address, failures)
        return _page("That is not the read token.", 401)
    throttle.succeeded(address)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        logins.issue(now),
        max_age=int(logins.max_age_s),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    """Revoke this browser's login (the guard has checked it and its origin) and forget it."""
    app_state(request.app).logins.revoke(cookie_value(request.headers), time.time())
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
