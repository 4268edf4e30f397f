"""Cut free text to a length without leaving part of a secret or of a placeholder behind.

Text is redacted first, then cut (``Redactor.cut``): a secret across the cut is replaced
before the cut can leave its head in clear. The cut itself never ends inside a redaction
placeholder (``[REDACTED:<rule>:<hash>]``, dropped whole when it would be split), and it
backs off to the start of the word it would split, so text cut before it is redacted (a
pure builder that has no redactor) never keeps the head of a token or a URL password either.
Text with no space before the limit is cut at the limit (outside any placeholder).
"""

from __future__ import annotations

import re

__all__ = ["PLACEHOLDER", "cut"]

PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_]{1,40}:[0-9a-f]{12}\]")
# a placeholder is at most this long, so only this much text before the cut is looked at
_LONGEST = len("[REDACTED::]") + 40 + 12


def cut(text: str, limit: int, ellipsis: str = "") -> str:
    """``text`` when it is at most ``limit`` characters, else its head followed by
    ``ellipsis``, at most ``limit`` characters in all, ending between two words (or, in text
    with no space there, outside any placeholder)."""
    if len(text) <= limit:
        return text
    if len(ellipsis) > limit:
        ellipsis = ""
    room = max(0, limit - len(ellipsis))
    end = room
    if 0 < end < len(text) and not text[end].isspace():
        start = end
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        if start > 0:
            end = start  # the split word goes: no head of a secret is left
    for m in PLACEHOLDER.finditer(text, max(0, end - _LONGEST), end + _LONGEST):
        if m.start() < end < m.end():
            end = m.start()
            break
    return (text[:end].rstrip() if end < room else text[:end]) + ellipsis
