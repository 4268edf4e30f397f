"""The answer of a content search (`GET /api/search`, `octel search --json`) and its snippets.

A snippet is plain text with the spans of the searched words in it: the console wraps each span
in a `<mark>` it builds itself (the text is never parsed as HTML), the terminal colours it.
`snippet` is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel

__all__ = ["SNIPPET_CHARS", "SearchHit", "SearchJump", "SearchPage", "Span", "snippet"]

# Characters of a part shown around its first match.
SNIPPET_CHARS = 160


class Span(BaseModel):
    start: int
    end: int


class SearchHit(BaseModel):
    """One part that matched: where it is (session, turn = the message's position, part) and
    what it says around the match."""

    session_id: str
    root_session_id: str | None
    title: str | None
    agent: str | None
    model: str | None
    source: str | None
    verdict: str | None
    turn: int
    part: int
    kind: str
    tool: str | None
    at: datetime | None
    snippet: str
    highlights: list[Span]
    live: bool = False  # read from a live session's message as it arrived, not from its archive


class SearchJump(BaseModel):
    """The query was an id: the session it names (a cycle id names its root session)."""

    session_id: str
    matched: str  # session or cycle


class SearchPage(BaseModel):
    """A page of hits. `pending_sessions` archived sessions are not in the index yet (the
    catch-up indexer reads them shortly), the oldest queued at `pending_since`: until then
    their text is not found."""

    q: str
    jump: SearchJump | None = None
    hits: list[SearchHit]
    next_cursor: str | None = None
    pending_sessions: int = 0
    pending_since: datetime | None = None


def _spans(low: str, needles: Sequence[str]) -> list[tuple[int, int]]:
    found: list[tuple[int, int]] = []
    for n in {n.lower() for n in needles if n}:
        start = low.find(n)
        while start >= 0:
            found.append((start, start + len(n)))
            start = low.find(n, start + len(n))
    found.sort()
    merged: list[tuple[int, int]] = []
    for s, e in found:
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((s, e))
    return merged


def _ascii_lower(text: str) -> str:
    # lowered as both databases lower for the search (ASCII letters): positions never move
    return "".join(c.lower() if c.isascii() else c for c in text)


def snippet(body: str, needles: Sequence[str], width: int = SNIPPET_CHARS) -> tuple[str, list[Span]]:
    """About `width` characters of `body` around the first match of any needle, on one line,
    and the spans of every needle in that window (merged where they overlap)."""
    flat = " ".join(body.split()) if body else ""
    spans = _spans(_ascii_lower(flat), needles)
    first = spans[0][0] if spans else 0
    start = max(0, min(first - width // 3, len(flat) - width))
    end = min(len(flat), start + width)
    window = flat[start:end]
    inside = [
        Span(start=max(s, start) - start, end=min(e, end) - start) for s, e in spans if s < end and e > start
    ]
    return window, inside
