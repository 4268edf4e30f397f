"""The console's login form, used only when `OCTEL_READ_TOKEN` is set.

The form posts the read token once; the answer sets an HttpOnly, SameSite=Strict cookie derived
from it (`web.guard.console_cookie`), which the console's own requests then carry.
"""

from __future__ import annotations

from html import escape
from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from web.deps import SettingsDep
from web.guard import COOKIE, console_cookie, valid_token

__all__ = ["router"]

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


def _page(message: str = "", status: int = 200) -> HTMLResponse:
    response = HTMLResponse(_PAGE.format(message=escape(message)), status)
    response.headers["Content-Security-Policy"] = _CSP
    response.headers["Cache-Control"] = "no-store"
    return response


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
    read = settings.read_token.get_secret_value()
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    if not valid_token((form.get("token") or [""])[0], read):
        return _page("That is not the read token.", 401)
    response = RedirectResponse("/", status_code=303)
    response.set_cookie(
        COOKIE,
        console_cookie(read),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/logout")
def logout() -> Response:
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response
