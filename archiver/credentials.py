"""Which Basic auth password a given OpenCode server takes: one per server from
``OCTEL_OPENCODE_PASSWORDS`` (a JSON object, URL to password), else the one the OpenCode 2
background service registered for its URL (``service.json``), else ``OCTEL_OPENCODE_PASSWORD``.

``service.json`` (``$XDG_STATE_HOME/opencode/service.json``, mode 600) is written by the service
when it listens: ``{id, version, url, pid, password}``. It is read each time, never cached and
never written (the service shuts down when the file stops naming it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import orjson

__all__ = ["SERVICE", "Service", "default_service_file", "parse_passwords", "password_for", "read_service"]

SERVICE = "service"  # `--server service`: the server service.json names
_MAX_FILE = 64 * 1024


def _key(url: str) -> str:
    return url.strip().rstrip("/").lower()


def parse_passwords(text: str) -> dict[str, str]:
    """``{"http://host:port": "password", …}``; ValueError naming the setting, never a value."""
    if not text.strip():
        return {}
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise ValueError(
            'OCTEL_OPENCODE_PASSWORDS is not JSON: give {"http://host:port": "password"}'
        ) from None
    if not isinstance(obj, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in obj.items()
    ):
        raise ValueError("OCTEL_OPENCODE_PASSWORDS must be a JSON object of server URL to password strings")
    bad = [k for k in obj if not k.startswith(("http://", "https://"))]
    if bad:
        raise ValueError(f"OCTEL_OPENCODE_PASSWORDS: {bad[0]!r} is not an http(s) server URL")
    return {_key(k): v for k, v in obj.items()}


@dataclass(frozen=True)
class Service:
    url: str
    password: str | None
    pid: int | None
    version: str | None


def default_service_file() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "opencode" / "service.json"


def read_service(path: Path | None) -> Service | None:
    """The registration in ``path`` (default: the user's), None when absent or unreadable."""
    try:
        raw = (path or default_service_file()).read_bytes()[:_MAX_FILE]
        obj = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("url"), str):
        return None
    pw, pid, ver = obj.get("password"), obj.get("pid"), obj.get("version")
    return Service(
        obj["url"].rstrip("/"),
        pw if isinstance(pw, str) and pw else None,
        pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        ver if isinstance(ver, str) else None,
    )


def password_for(
    url: str, *, passwords: str = "", default: str | None = None, service_file: Path | None = None
) -> str | None:
    """The password to send to ``url`` (None: none configured)."""
    per_server = parse_passwords(passwords) if passwords else {}
    if (pw := per_server.get(_key(url))) is not None:
        return pw
    svc = read_service(service_file)
    if svc is not None and svc.password and _key(svc.url) == _key(url):
        return svc.password
    return default
