"""The ingestion token: configured, or created once in the data folder with mode 0600."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from telemetry.settings import Settings

__all__ = ["TOKEN_FILE", "ensure_ingest_token"]

TOKEN_FILE = "ingest-token"


def ensure_ingest_token(settings: Settings) -> tuple[str, Path | None, bool]:
    """(token, file it lives in or None when configured, created now)."""
    if settings.ingest_token is not None and settings.ingest_token.get_secret_value():
        return settings.ingest_token.get_secret_value(), None, False
    path = settings.data_dir / TOKEN_FILE
    if path.exists():
        token = path.read_text(encoding="ascii").strip()
        if token:
            return token, path, False
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the data folder is private
    token = secrets.token_urlsafe(32)
    # O_EXCL + 0600 at creation: the token is never readable by others, not even briefly.
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(token + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return token, path, True
