"""The shapes of JSON from outside, read without trusting them (pure helpers).

OpenCode, Claude Code and OTLP payloads are arbitrary JSON: a field octel reads may be missing
or of another type. These read one value as the shape the caller needs, or a neutral one
(``{}``, ``""``, ``None``), so a reader never raises on a payload it did not expect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["RawJson", "as_num", "as_obj", "as_text", "text_or_none"]

RawJson = dict[str, Any]
"""A JSON object exactly as an outside source sent it: an OpenCode server's session, message,
part or event, a Claude Code transcript line or CLI result, an archive document read back, an
HTTP body before it is validated, the OpenAPI document FastAPI generates. Nothing is promised
about its keys; readers go through the functions below."""


def as_obj(v: object) -> Mapping[str, Any]:
    """``v`` when it is a JSON object, else an empty one."""
    if type(v) is dict:  # the common case, checked first: the ABC check costs more
        return v
    return v if isinstance(v, Mapping) else {}


def as_text(v: object) -> str:
    """``v`` when it is a string, else ``""``."""
    return v if isinstance(v, str) else ""


def text_or_none(v: object) -> str | None:
    """``v`` when it is a string, else ``None``."""
    return v if isinstance(v, str) else None


def as_num(v: object) -> float | None:
    """``v`` as a float when it is a JSON number (a bool is not one), else ``None`` (also for an
    integer too large for a float, which Python's own JSON reader gives)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        return float(v)
    except OverflowError:
        return None
