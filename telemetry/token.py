"""The ingestion token: configured, or created once in the data folder with mode 0600."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from telemetry.settings import Settings

__all__ = ["MIN_TOKEN_CHARS", "TOKEN_FILE", "ensure_ingest_token", "short_tokens"]

TOKEN_FILE = "ingest-token"
# a guess a second for a year finds none of 16 URL-safe characters' 2**96 values
MIN_TOKEN_CHARS = 16


def short_tokens(settings: Settings, ingest_token: str) -> list[str]:
    """The settings naming a token shorter than `MIN_TOKEN_CHARS`."""
    read = settings.read_token.get_secret_value() if settings.read_token else ""
    pairs = (("OCTEL_INGEST_TOKEN", ingest_token), ("OCTEL_READ_TOKEN", read))
    return [name for name, token in pairs if token and len(token) < MIN_TOKEN_CHARS]


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
