"""Time helpers: every timestamp octel stores is timezone-aware UTC."""

from __future__ import annotations

import functools
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import BeforeValidator, TypeAdapter, ValidationInfo, WithJsonSchema
from pydantic_core import PydanticCustomError

__all__ = ["Since", "as_utc", "checked_utc", "parse_duration", "parse_since", "since_value", "utcnow"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(dt: datetime) -> datetime:
    """SQLite hands back naive datetimes; octel only ever stored UTC."""
    return dt.replace(tzinfo=UTC) if dt.tzinfo is None else dt.astimezone(UTC)


def checked_utc(dt: datetime) -> datetime:
    """`as_utc` for input: a time whose UTC form leaves the years 1 to 9999 (year 1 at +14:00)
    raises ValueError instead of OverflowError."""
    try:
        return as_utc(dt)
    except OverflowError:
        raise ValueError(f"{dt.isoformat()} is outside the years 1 to 9999 in UTC") from None


def parse_duration(text: str) -> timedelta:
    """`90s`, `15m`, `24h`, `30d`, `2w` → timedelta; anything else raises ValueError."""
    m = _DURATION.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 24h, 30d or 2w")
    try:
        return timedelta(seconds=float(m.group(1)) * _UNITS[m.group(2)])
    except OverflowError:
        raise ValueError(f"{text!r} is longer than any time octel can hold") from None


def parse_since(text: str, now: datetime) -> datetime:
    """A relative duration (`24h`, meaning that long before now) or an ISO 8601 time."""
    try:
        back = parse_duration(text)
    except ValueError:
        if _DURATION.match(text):
            raise
    else:
        try:
            return now - back
        except OverflowError:
            raise ValueError(f"{text!r} reaches back before year 1") from None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither a duration like 24h nor an ISO 8601 time") from None
    return checked_utc(parsed)


def _since(value: object, info: ValidationInfo) -> object:
    if isinstance(value, str):
        if not value.strip():
            return None
        now = (info.context or {}).get("now") or utcnow()
        try:
            return parse_since(value.strip(), now)
        except ValueError as e:  # the sentence alone, without pydantic's "Value error, " prefix
            raise PydanticCustomError("time", str(e)) from None
    return value


# One type for every `since`/`until` octel reads, in a route's query or on the command line.
Since = Annotated[
    datetime | None,
    BeforeValidator(_since),
    WithJsonSchema({"type": "string", "description": "24h, 7d (back from now) or an ISO 8601 time"}),
]


@functools.cache
def _since_adapter() -> TypeAdapter[datetime | None]:
    """Built on first use: building it costs every command's start, most never read a time."""
    return TypeAdapter(Since)


def since_value(text: str | None, now: datetime | None = None) -> datetime | None:
    """`Since` outside a model (the CLI's options); ValueError with one sentence for bad input.
    `now` pins the clock, so a command's `--since` and `--until` share one."""
    try:
        return _since_adapter().validate_python(text, context={"now": now} if now is not None else None)
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        errors = getattr(e, "errors", None)
        raise ValueError(errors()[0]["msg"] if errors else str(e)) from None
