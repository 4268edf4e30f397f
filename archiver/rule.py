"""One redaction rule, as data (the built-in table is ``archiver.rules``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Rule"]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: bytes
    group: int
    caseless: bool
    anchors: tuple[bytes, ...]
    check: Callable[[bytes], bool] | None = None
    # a rule without anchors: a pattern whose matches are the only stretches of text where a
    # match can lie (the pattern then runs only there, with the text around it in view)
    regions: bytes | None = None
    # a token rule: a match counts only at a token boundary (``archiver.redact.token_start``),
    # checked after the match so the pattern keeps its literal start (the regex engine's fast
    # search; a lookbehind in front made the plain scan a hundred times slower)
    boundary: bool = False
