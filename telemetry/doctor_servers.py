"""`octel doctor`'s OpenCode lines: for the configured server (``opencode server``) and each
other one a watcher follows or ``OCTEL_OPENCODE_PASSWORDS`` names (``followed server``), which
generation and version it runs and whether its credentials work, with the password the watcher
would send it (its own, the OpenCode 2 service's, else ``OCTEL_OPENCODE_PASSWORD``). OpenCode 2
always asks for HTTP Basic auth; a 1.x server asks only when it was given a password."""

from __future__ import annotations

import httpx

from archiver.credentials import parse_passwords
from telemetry.doctor_check import HEALTH_TIMEOUT_S, Check
from telemetry.settings import Settings
from telemetry.tree_archiving import opencode_password

__all__ = ["opencode_checks"]

_MAIN, _OTHER = "opencode server", "followed server"


def _key(url: str) -> str:
    return url.strip().rstrip("/").lower()


def _others(s: Settings, followed: list[str]) -> list[str]:
    """The servers to check besides the configured one, each once."""
    named: list[str] = []
    if s.opencode_passwords is not None:
        try:
            named = list(parse_passwords(s.opencode_passwords.get_secret_value()))
        except ValueError:
            named = []  # the settings check says what is wrong with it
    seen, out = {_key(s.opencode_url)}, []
    for url in [*followed, *named]:
        if _key(url) not in seen:
            seen.add(_key(url))
            out.append(url.rstrip("/"))
    return out


def opencode_checks(s: Settings, client: httpx.Client, followed: list[str]) -> list[Check]:
    """The configured server's check, then one per other server (followed, or given a password)."""
    checks = [_opencode(s, client, s.opencode_url, _MAIN)]
    for url in _others(s, followed):
        c = _opencode(s, client, url, _OTHER)
        checks.append(Check(_OTHER, c.status, c.detail, c.fix))
    return checks


def _basic(s: Settings, url: str) -> tuple[str, str] | None:
    pw = opencode_password(s, url) or ""
    return (s.opencode_username, pw) if pw else None


def _auth_failed(name: str, base: str, status: int) -> Check:
    return Check(
        name,
        "fail",
        f"{base}: authentication failed (HTTP {status}); the server wants HTTP Basic auth",
        "set OCTEL_OPENCODE_PASSWORD, or this server's in OCTEL_OPENCODE_PASSWORDS (OpenCode 2 "
        "prints it as `server password`, its background service keeps it in service.json), and "
        "OCTEL_OPENCODE_USERNAME if it is not `opencode`",
    )


def _opencode_v2(s: Settings, client: httpx.Client, base: str, name: str) -> Check | None:
    """The check of an OpenCode 2 server (``/api/info``); None when it is not one."""
    try:
        r = client.get(base + "/api/info", timeout=HEALTH_TIMEOUT_S, auth=_basic(s, base))
    except httpx.HTTPError:
        return None
    if r.status_code in (401, 403):
        return _auth_failed(name, base, r.status_code)
    try:
        body = r.json()
    except ValueError:
        return None
    info = body.get("data", body) if isinstance(body, dict) else None
    if r.status_code != 200 or not isinstance(info, dict) or "version" not in info:
        return None
    return Check(name, "ok", f"{base} healthy, version {info['version']} (OpenCode generation 2, auth ok)")


def _opencode(s: Settings, client: httpx.Client, url: str, name: str) -> Check:
    base = url.rstrip("/")
    health = base + "/global/health"
    try:
        r = client.get(health, timeout=HEALTH_TIMEOUT_S, auth=_basic(s, base))
    except httpx.HTTPError as e:
        if name == _MAIN and "opencode_url" not in s.model_fields_set:
            # Never configured: a fleet that runs only Claude Code has no OpenCode server.
            return Check(
                name,
                "warn",
                f"no OpenCode server at the default {health} ({type(e).__name__}); "
                "archiving from OpenCode needs one, Claude Code runs and cycles do not",
                "to archive OpenCode sessions, start `opencode serve` or set OCTEL_OPENCODE_URL",
            )
        return Check(
            name,
            "fail",
            f"no answer from {'the configured ' if name == _MAIN else ''}{health}: {type(e).__name__}",
            "start `opencode serve` or fix OCTEL_OPENCODE_URL" if name == _MAIN else "start the server",
        )
    try:
        body = r.json()
    except ValueError:
        body = None
    if r.status_code != 200 or not isinstance(body, dict) or body.get("healthy") is not True:
        # OpenCode 2 answers the 1.x path with its web UI's HTML (200): ask its own route
        v2 = _opencode_v2(s, client, base, name)
        if v2 is not None:
            return v2
        if r.status_code in (401, 403):
            return _auth_failed(name, base, r.status_code)
        return Check(
            name,
            "fail",
            f"{health} answered {r.status_code} without healthy: true",
            "check that OCTEL_OPENCODE_URL points at `opencode serve`",
        )
    auth = ", auth ok" if _basic(s, base) is not None else ""
    return Check(
        name, "ok", f"{url} healthy, version {body.get('version', '?')} (OpenCode generation 1{auth})"
    )
