"""Where things sit in serialised JSON text: escapes, strings and numbers (pure helpers).

Redaction works on the JSON text, so it needs to know, for a span it wants to replace,
whether the span starts on a character of a string rather than in the middle of an escape,
whether it lies in a string or in a number, and how the text reads once the ``\\uXXXX`` and
``\\/`` escapes of every nesting level are decoded (JSON text nested in a string, written by
a tool that escapes more than it must, hides ``ghp_`` as ``\\\\u0067hp_``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["View", "at_boundary", "continues_number", "decoded_view", "number_around", "string_spans"]

_HEX = frozenset(b"0123456789abcdefABCDEF")
_BS, _U = ord("\\"), ord("u")
_NUMBER = frozenset(b"0123456789eE.+-")
_DIGIT = frozenset(b"0123456789")
# an escape of one character at some nesting level: the whole run of backslashes before it
# (the last 2**(k-1) of them make the escape at level k, the rest are escaped backslashes)
_ESCAPE = re.compile(rb"(?<!\\)(\\+)(?:u([0-9a-fA-F]{4})(?:\\{1,8}u([dD][c-fC-F][0-9a-fA-F]{2}))?|/)")
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_PAIR = re.compile(rb"\\[u/]")  # the last backslash of an escape and its letter


def _odd_backslashes_before(text: bytes, i: int) -> bool:
    j = i - 1
    while j >= 0 and text[j] == _BS:
        j -= 1
    return (i - 1 - j) % 2 == 1


def at_boundary(text: bytes, i: int) -> bool:
    """True when text[i] starts a character of a JSON string, not the middle of an escape."""
    if _odd_backslashes_before(text, i):
        return False
    # inside \\uXXXX: a real 'u' escape 1..4 bytes back with only hex digits in between
    for k in range(1, 5):
        p = i - k
        if p < 1:
            return True
        if text[p] == _U:
            return not _odd_backslashes_before(text, p)
        if text[p] not in _HEX:
            return True
    return True


@dataclass(frozen=True)
class View:
    """JSON text with the escapes of printable characters decoded, and the way back.

    ``marks`` holds, for each decoded escape in order: its position in the view, its position
    in the original text, its length there and the length of the character in the view."""

    text: bytes
    marks: tuple[tuple[int, int, int, int], ...] = ()

    def original(self, pos: int, *, end: bool = False) -> int:
        """The original position of view position ``pos`` (an ``end`` inside a decoded
        character covers the whole escape)."""
        i = bisect.bisect_right(self.marks, pos, key=lambda m: m[0]) - 1
        if i < 0:
            return pos
        vpos, opos, olen, vlen = self.marks[i]
        if pos == vpos:
            return opos
        if pos < vpos + vlen:
            return opos + olen if end else opos
        return opos + olen + (pos - vpos - vlen)


def _escapes(text: bytes) -> Iterator[re.Match[bytes]]:
    """``_ESCAPE.finditer(text)``, tried only where a ``\\u`` or ``\\/`` is: the pattern's
    own search stops at every backslash of the text (each ``\\n`` of a transcript). Every
    match ends a run of backslashes with one of those pairs, so trying the pattern where that
    run begins finds the same matches."""
    last = 0
    for hit in _PAIR.finditer(text):
        start = hit.start()
        while start > 0 and text[start - 1] == _BS:
            start -= 1
        if start < last:  # inside the escape matched before (the low half of a pair)
            continue
        m = _ESCAPE.match(text, start)
        if m is not None:
            last = m.end()
            yield m


def decoded_view(text: bytes) -> View:
    """``text`` with each ``\\uXXXX`` of a printable character (not ``"`` or ``\\``, not a
    surrogate) and each ``\\/`` decoded at whatever nesting level it sits. The decoded
    characters need no escape at any level, so the view keeps the text's string structure."""
    if _PAIR.search(text) is None:
        # every escape this decodes holds one of these pairs; the regex engine finds them
        # several times faster than ``in`` (whose search for a two-byte needle is slow)
        return View(text)
    pieces: list[bytes] = []
    marks: list[tuple[int, int, int, int]] = []
    last = shift = 0
    for m in _escapes(text):
        run = len(m[1])
        level = run & -run  # the backslashes of the escape itself
        end = m.end()
        if m[2] is None:
            char = b"/"
        else:
            cp = int(m[2], 16)
            if 0xD800 <= cp < 0xDC00 and m[3] is not None and m.end(3) - m.start(2) == level + 9:
                # a surrogate pair, both halves escaped at the same level
                cp = 0x10000 + ((cp - 0xD800) << 10) + (int(m[3], 16) - 0xDC00)
            elif m[3] is not None:
                end = m.end(2)
            if cp < 0x20 or cp in (0x22, 0x5C) or 0xD800 <= cp < 0xE000:
                continue
            char = chr(cp).encode()
        start = m.start(1) + run - level
        pieces += (text[last:start], char)
        marks.append((start - shift, start, end - start, len(char)))
        shift += end - start - len(char)
        last = end
    if not marks:
        return View(text)
    pieces.append(text[last:])
    return View(b"".join(pieces), tuple(marks))


def string_spans(text: bytes, upto: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each string token (quotes included) that starts before ``upto``."""
    for m in _STRING.finditer(text):
        if m.start() >= upto:
            return
        yield m.span()


def number_around(text: bytes, start: int, end: int) -> tuple[int, int] | None:
    """The number token holding ``text[start:end]`` outside any string, or None when the span
    is not within one number (it crosses structure, or lies in ``true``/``false``/``null``)."""
    if any(b not in _NUMBER for b in text[start:end]):
        return None
    ns, ne = start, end
    while ns > 0 and text[ns - 1] in _NUMBER:
        ns -= 1
    while ne < len(text) and text[ne] in _NUMBER:
        ne += 1
    return ns, ne


def _in_u_escape(text: bytes, i: int) -> bool:
    """text[i] is one of the hex digits of a ``\\uXXXX`` escape at any nesting level (a JSON
    text held in a string escapes its escapes: ``\\\\u0019``). Reading a literal ``\\u0019``
    as an escape only lets a configured value after it be redacted: the safe side."""
    for k in range(1, 5):
        p = i - k
        if p < 1:
            return False
        if text[p] == _U:
            return text[p - 1] == 0x5C  # a backslash
        if text[p] not in _HEX:
            return False
    return False


def continues_number(text: bytes, start: int, end: int) -> bool:
    """A digit run at text[start:end] continues a longer number: a digit (or a digit and a
    decimal point) before it, a digit, a decimal part or an exponent (``e5``, ``E+5``) after
    it. The hex digits of an escape before it (``\\u0007``) are no digits of the text."""

    def digit_at(i: int) -> bool:
        return i >= 0 and text[i] in _DIGIT and not _in_u_escape(text, i)

    after = text[end : end + 2]
    return (
        digit_at(start - 1)
        or (start >= 2 and text[start - 1] == 46 and digit_at(start - 2))
        or (after[:1] != b"" and after[0] in _DIGIT)
        or (len(after) == 2 and after[0] == 46 and after[1] in _DIGIT)
        or (len(after) == 2 and after[0] in b"eE" and after[1] in b"+-0123456789")
    )
