"""Redaction of secrets from a JSON document before anything touches disk.

It runs on the serialised JSON text (orjson output), which covers every string, keys and
values alike, in one pass per rule at C speed instead of a Python walk over the tree. Rules
are written so a match never crosses a string boundary (their character classes exclude
``"`` and ``\\``) and a replacement never starts inside an escape sequence (checked for each
match), so the text stays valid JSON. Each secret becomes ``[REDACTED:<rule>:<hmac>]``: the
keyed hash lets the same secret be recognised across archives without being stored.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "MIN_SECRET_LENGTH",
    "RULES",
    "RedactionResult",
    "Redactor",
    "load_key",
    "secret_values",
]

log = logging.getLogger(__name__)

MIN_SECRET_LENGTH = 12
_V = rb"[^\s\"\\]"  # one unescaped, non-space byte inside a JSON string

# (rule, pattern, group holding the secret, match on lower-cased text). Patterns are bytes and
# case-insensitive rules run on ``bytes.lower()`` (ASCII only, so offsets are unchanged). Rule
# names avoid words like "secret" or "token" so a placeholder never looks like a KEY=VALUE line.
RULES: tuple[tuple[str, bytes, int, bool], ...] = (
    (
        "key_block",
        rb"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----(?:[^\"\\]|\\.)*?"
        rb"(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|(?=\"))",
        0,
        False,
    ),
    ("github", rb"(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})", 0, False),
    ("gitlab", rb"gl(?:pat|dt|rt|ptt|ft|soat)-[A-Za-z0-9_\-]{20,255}", 0, False),
    ("anthropic", rb"sk-ant-[A-Za-z0-9_\-]{20,255}", 0, False),
    ("openai", rb"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,255}", 0, False),
    ("aws", rb"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16,20}", 0, False),
    ("slack", rb"xox[abposre]-[A-Za-z0-9\-]{10,255}", 0, False),
    ("slack", rb"xapp-[A-Za-z0-9\-]{10,255}", 0, False),
    ("slack", rb"hooks\.slack\.com/services/[A-Za-z0-9/]{20,255}", 0, False),
    ("jwt", rb"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0, False),
    ("forgejo", rb"authorization: ?token ([0-9a-f]{40})", 1, True),
    ("forgejo", rb"token=([0-9a-f]{40})", 1, True),
    ("url_userinfo", rb"://[^\s\"\\/:@]{1,200}:([^\s\"\\/@\[][^\s\"\\/@]{0,199})@", 1, False),
    ("bearer", rb"bearer +([a-z0-9._~+/=\-]{16,})", 1, True),
    # KEY=VALUE lines with a secret-looking key; one pattern per keyword keeps each scan on
    # the regex engine's fast literal-prefix search
    *(
        (
            "assignment",
            word + rb"[a-z0-9_]{0,30} {0,3}[=:] {0,3}['`]?([^\s\"\\\[$'`{(<]" + _V + rb"{5,})",
            1,
            True,
        )
        for word in (
            b"passw",
            b"secret",
            b"token",
            b"api_key",
            b"apikey",
            b"access_key",
            b"accesskey",
            b"private_key",
            b"credential",
            b"auth",
        )
    ),
)

_HEX = frozenset(b"0123456789abcdefABCDEF")
_BS, _U = ord("\\"), ord("u")


def _odd_backslashes_before(text: bytes, i: int) -> bool:
    j = i - 1
    while j >= 0 and text[j] == _BS:
        j -= 1
    return (i - 1 - j) % 2 == 1


def _at_boundary(text: bytes, i: int) -> bool:
    """True when text[i] starts a character of the JSON string, not the middle of an escape."""
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


def _overlaps(taken: list[tuple[int, int, str]], start: int, end: int) -> bool:
    # taken is sorted by start and its spans never overlap: check the two neighbours
    i = bisect.bisect_left(taken, (start,))
    if i < len(taken) and taken[i][0] < end:
        return True
    return i > 0 and taken[i - 1][1] > start


@dataclass(frozen=True)
class RedactionResult:
    data: bytes
    counts: dict[str, int]


class Redactor:
    """Replaces configured secret values and built-in secret patterns in JSON text."""

    def __init__(self, key: bytes, values: Iterable[str] = (), *, rules: bool = True) -> None:
        self._key = key
        accepted: list[str] = []
        self.refused: list[str] = []
        for v in {v.strip() for v in values if v and v.strip()}:
            if len(v) < MIN_SECRET_LENGTH:
                self.refused.append(v)
                log.warning(
                    "secret value of %d characters refused: shorter than %d would mangle the archive",
                    len(v),
                    MIN_SECRET_LENGTH,
                )
            else:
                accepted.append(v)
        self.values = tuple(sorted(accepted, key=len, reverse=True))
        patterns: list[tuple[str, re.Pattern[bytes], int, bool]] = []
        if self.values:
            escaped = [orjson.dumps(v)[1:-1] for v in self.values]
            patterns.append(("configured", re.compile(b"|".join(map(re.escape, escaped))), 0, False))
        if rules:
            patterns += [(name, re.compile(p), g, low) for name, p, g, low in RULES]
        self._patterns = patterns

    def placeholder(self, rule: str, secret: bytes) -> bytes:
        digest = hmac.new(self._key, secret, hashlib.sha256).hexdigest()[:12]
        return f"[REDACTED:{rule}:{digest}]".encode()

    def redact_json(self, text: bytes, counts: Counter[str] | None = None) -> bytes:
        """Redact serialised JSON (UTF-8 bytes as orjson writes them).

        Every pattern scans the same original text; overlapping finds go to the rule listed
        first, and the output is built in one pass.
        """
        counts = counts if counts is not None else Counter()
        lowered: bytes | None = None
        taken: list[tuple[int, int, str]] = []
        for rule, pat, group, low in self._patterns:
            if low and lowered is None:
                lowered = text.lower()
            hay = lowered if low and lowered is not None else text
            pos = 0
            while (m := pat.search(hay, pos)) is not None:
                start, end = m.span(group)
                if not _at_boundary(text, start) or _overlaps(taken, start, end):
                    pos = m.start() + 1
                    continue
                bisect.insort(taken, (start, end, rule))
                pos = end
        if not taken:
            return text
        pieces: list[bytes] = []
        last = 0
        for start, end, rule in taken:
            pieces += (text[last:start], self.placeholder(rule, text[start:end]))
            counts[rule] += 1
            last = end
        pieces.append(text[last:])
        return b"".join(pieces)

    def redact_bytes(self, data: bytes) -> RedactionResult:
        counts: Counter[str] = Counter()
        out = self.redact_json(data, counts)
        return RedactionResult(out, dict(sorted(counts.items())))

    def redact_obj(self, obj: Any) -> tuple[Any, dict[str, int]]:
        """The same object with every string redacted (via its JSON text)."""
        res = self.redact_bytes(orjson.dumps(obj))
        return orjson.loads(res.data), res.counts

    def redact_str(self, s: str) -> str:
        out: str = self.redact_obj(s)[0]
        return out


def load_key(path: Path) -> bytes:
    """The HMAC key kept at ``path`` (hex), created with mode 0600 on first use."""
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as f:
        f.write(key.hex() + "\n")
    return key


def secret_values(values: str | None, file: Path | None) -> list[str]:
    """Secret values from a comma-separated setting and a file of one value a line."""
    out = [v.strip() for v in (values or "").split(",") if v.strip()]
    if file is not None:
        out += [line.strip() for line in file.read_text().splitlines() if line.strip()]
    return out
