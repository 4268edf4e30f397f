"""Opaque keyset cursors: (timestamp, id) of the last row a page showed."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime

from telemetry.timeutil import as_utc

__all__ = ["CursorError", "decode_cursor", "encode_cursor"]


class CursorError(ValueError):
    """The cursor was not produced by octel (or was mangled on the way)."""


def encode_cursor(at: datetime, row_id: int) -> str:
    raw = json.dumps([as_utc(at).isoformat(), row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        at, row_id = json.loads(raw)
        if not isinstance(row_id, int) or isinstance(row_id, bool):
            raise TypeError
        return as_utc(datetime.fromisoformat(at)), row_id
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise CursorError("cursor is not valid; start again without it") from None
