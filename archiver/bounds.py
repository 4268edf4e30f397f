"""The bounds every ingested value is checked against, so the stores never see a value they
cannot hold: 32-bit INTEGER columns, finite floats, JSON objects of bounded depth whose
integers fit 64 bits (SQLite, orjson) and whose numbers are finite (PostgreSQL's JSON)."""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import AfterValidator

from archiver.shape import RawJson

__all__ = [
    "INT32_MAX",
    "INT64_MAX",
    "MAX_DEPTH",
    "MAX_SECONDS",
    "JsonObject",
    "check_json",
    "iso_time_only",
    "no_nul",
]

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
MAX_DEPTH = 32
MAX_SECONDS = 1e9  # about 31 years: longer than any cycle, short enough for date arithmetic


def no_nul(text: str) -> str:
    """PostgreSQL text cannot hold NUL characters; refuse them instead of failing the write."""
    if "\x00" in text:
        raise ValueError("text may not contain NUL characters")
    return text


def iso_time_only(v: Any) -> Any:
    """Times are ISO 8601 text (or a datetime from Python callers), never a bare number: the
    schema says `date-time`, and `0` meaning 1970 is a mistake to refuse, not to store."""
    if isinstance(v, int | float):
        raise ValueError("a time must be ISO 8601 text, such as 2026-11-30T12:00:00Z")
    return v


def _where(path: list[str]) -> str:
    return "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in path).lstrip(".") or "value"


def check_json(value: Any, max_depth: int = MAX_DEPTH) -> Any:
    """`value` unchanged when it is plain JSON within the bounds; ValueError naming the place
    (`a.b[3]`) of the first thing that is not. Iterative: depth never costs Python stack."""
    stack: list[tuple[Any, list[str]]] = [(value, [])]
    while stack:
        v, path = stack.pop()
        if len(path) > max_depth:
            raise ValueError(f"{_where(path)}: nested deeper than {max_depth} levels")
        if isinstance(v, dict):
            for k, child in v.items():
                if not isinstance(k, str):
                    raise ValueError(f"{_where(path)}: object keys must be text")
                no_nul(k)
                stack.append((child, [*path, k]))
        elif isinstance(v, list):
            stack.extend((child, [*path, str(i)]) for i, child in enumerate(v))
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, int):
            if not -INT64_MAX - 1 <= v <= INT64_MAX:
                raise ValueError(f"{_where(path)}: integer outside 64 bits")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise ValueError(f"{_where(path)}: number is not finite")
        elif isinstance(v, str):
            continue
        else:
            raise ValueError(f"{_where(path)}: {type(v).__name__} is not JSON")
    return value


JsonObject = Annotated[RawJson, AfterValidator(check_json)]
