"""JSON Lines as Claude Code writes them, read as far as they go (pure: bytes in, objects out).

A transcript is appended to while the CLI runs, so its last line may be cut short: that line is
reported as ``truncated`` and left out of ``consumed``, so an incremental reader starts there
next time. A bad line elsewhere is reported as ``malformed`` and skipped; reading goes on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from archiver.errors import WalkError

__all__ = ["ReadLines", "read_lines"]


@dataclass
class ReadLines:
    """The objects of a JSON Lines text, what could not be read, and how many bytes were whole."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    errors: list[WalkError] = field(default_factory=list)
    # bytes up to the end of the last complete line: where the next incremental read begins
    consumed: int = 0


def read_lines(data: bytes, *, name: str = "", session_id: str | None = None) -> ReadLines:
    """Every JSON object line of ``data``; never raises."""
    out = ReadLines()
    pos = 0
    number = 0
    size = len(data)
    while pos < size:
        end = data.find(b"\n", pos)
        whole = end != -1
        stop = end if whole else size
        raw = data[pos:stop].strip()
        number += 1
        next_pos = stop + 1 if whole else size
        if not raw:
            if whole:
                out.consumed = next_pos
            pos = next_pos
            continue
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if not whole:
                # being written: left for the next read, not consumed
                out.errors.append(
                    WalkError("truncated", "line", session_id, f"line {number} is cut short", name)
                )
                break
            out.errors.append(WalkError("malformed", "line", session_id, f"line {number}: {exc}", name))
            out.consumed = next_pos
            pos = next_pos
            continue
        if not isinstance(obj, dict):
            out.errors.append(
                WalkError("malformed", "line", session_id, f"line {number} is not a JSON object", name)
            )
        else:
            out.objects.append(obj)
        # a complete object without its newline is still whole: the CLI writes line and newline at once
        out.consumed = next_pos
        pos = next_pos
    return out
