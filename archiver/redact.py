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
import contextlib
import hashlib
import hmac
import logging
import os
import re
import secrets
import tempfile
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from archiver.fsutil import fsync_dir
from archiver.rules import RULES, Rule

__all__ = [
    "KEY_BYTES",
    "MIN_SECRET_LENGTH",
    "RULES",
    "RedactKeyError",
    "RedactionResult",
    "Redactor",
    "load_key",
    "secret_values",
]

log = logging.getLogger(__name__)

MIN_SECRET_LENGTH = 12
KEY_BYTES = 32
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


def _anchor_database(rules: tuple[Rule, ...]) -> Any:
    """A compiled multi-pattern anchor scanner when hyperscan is installed, else None."""
    try:
        import hyperscan  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        return None
    exprs = [re.escape(a) for r in rules for a in r.anchors]
    if not exprs:
        return None
    flags = [hyperscan.HS_FLAG_CASELESS if r.caseless else 0 for r in rules for _ in r.anchors]
    db = hyperscan.Database()
    db.compile(expressions=exprs, ids=list(range(len(exprs))), elements=len(exprs), flags=flags)
    return db


def _escaped_forms(values: Iterable[str], depth: int = 3) -> tuple[bytes, ...]:
    """Each value as it appears in JSON text: escaped once inside a string, and again for
    each level of JSON text nested in a string (a value with ``"`` or ``\\`` changes form at
    each level). Longest first, so the alternation takes the whole of the longest form."""
    forms: set[bytes] = set()
    for v in values:
        text = v
        for _ in range(depth):
            text = orjson.dumps(text).decode()[1:-1]
            forms.add(text.encode())
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


@dataclass(frozen=True)
class RedactionResult:
    data: bytes
    counts: dict[str, int]


class Redactor:
    """Replaces configured secret values and built-in secret patterns in JSON text."""

    def __init__(
        self, key: bytes, values: Iterable[str] = (), *, rules: bool = True, engine: str = "auto"
    ) -> None:
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
        rules_: list[Rule] = []
        if self.values:
            escaped = _escaped_forms(self.values)
            rules_.append(Rule("configured", b"|".join(map(re.escape, escaped)), 0, False, escaped))
        if rules:
            rules_ += RULES
        self._rules = tuple(rules_)
        # plain scan: case-insensitive rules run on bytes.lower() with lower-case patterns,
        # which keeps the regex engine on its fast literal-prefix search
        self._search = [re.compile(r.pattern) for r in self._rules]
        # anchored scan: the same patterns tried only where an anchor was found
        self._match = [re.compile(r.pattern, re.IGNORECASE if r.caseless else 0) for r in self._rules]
        # hyperscan (when installed) finds every anchor in one pass; plain `re` is the fallback
        self._hs = _anchor_database(self._rules) if engine != "re" else None
        self._anchors = [(i, len(a)) for i, r in enumerate(self._rules) for a in r.anchors]
        self._hs_lock = threading.Lock()

    @property
    def engine(self) -> str:
        return "hyperscan" if self._hs is not None else "re"

    def _spans_re(self, text: bytes) -> list[tuple[int, int, int]]:
        """(rule index, start, end) of every match, rule by rule, left to right."""
        lowered: bytes | None = None
        out: list[tuple[int, int, int]] = []
        for i, (rule, pat) in enumerate(zip(self._rules, self._search, strict=True)):
            if rule.caseless and lowered is None:
                lowered = text.lower()
            hay = lowered if rule.caseless and lowered is not None else text
            pos = 0
            while (m := pat.search(hay, pos)) is not None:
                out.append((i, *m.span(rule.group)))
                pos = m.start() + 1
        return out

    def _spans_hs(self, text: bytes, db: Any) -> list[tuple[int, int, int]]:
        starts: set[tuple[int, int]] = set()
        anchors = self._anchors

        def hit(ident: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            rule, length = anchors[ident]
            starts.add((rule, to - length))

        with self._hs_lock:
            db.scan(text, match_event_handler=hit)
        out: list[tuple[int, int, int]] = []
        for rule, start in sorted(starts):
            m = self._match[rule].match(text, start)
            if m is not None:
                out.append((rule, *m.span(self._rules[rule].group)))
        return out

    def placeholder(self, rule: str, secret: bytes) -> bytes:
        digest = hmac.new(self._key, secret, hashlib.sha256).hexdigest()[:12]
        return f"[REDACTED:{rule}:{digest}]".encode()

    def redact_json(self, text: bytes, counts: Counter[str] | None = None) -> bytes:
        """Redact serialised JSON (UTF-8 bytes as orjson writes them).

        Every pattern scans the same original text; overlapping finds go to the rule listed
        first, and the output is built in one pass.
        """
        counts = counts if counts is not None else Counter()
        spans = self._spans_hs(text, self._hs) if self._hs is not None else self._spans_re(text)
        taken: list[tuple[int, int, str]] = []
        for rule, start, end in spans:  # rule order first: overlaps go to the earlier rule
            if end > start and _at_boundary(text, start) and not _overlaps(taken, start, end):
                bisect.insort(taken, (start, end, self._rules[rule].name))
        if not taken:
            return text
        pieces: list[bytes] = []
        last = 0
        for start, end, name in taken:
            pieces += (text[last:start], self.placeholder(name, text[start:end]))
            counts[name] += 1
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


class RedactKeyError(ValueError):
    """The redaction key file exists but holds no usable key; the message says why."""


def _parse_key(path: Path, text: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise RedactKeyError(f"redaction key file {path} does not hold a hex key") from None
    if len(key) < KEY_BYTES:
        # an empty or short key makes placeholders hashes anyone can brute-force; a new key
        # would no longer match the placeholders already written, so nothing is replaced here
        raise RedactKeyError(
            f"redaction key file {path} holds {len(key)} bytes, fewer than {KEY_BYTES}: "
            "restore it from a backup, or delete it to start a new key if no archive was written with it"
        )
    return key


def load_key(path: Path) -> bytes:
    """The HMAC key kept at ``path`` (hex), created with mode 0600 on first use.

    A new key is written to a temporary file, fsynced and linked into place, so the key file
    is never seen empty or half written, and of two processes creating it at once both use
    the first one's. An existing file with fewer than 32 bytes of key raises
    ``RedactKeyError`` (never used silently).
    """
    try:
        return _parse_key(path, path.read_text())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(KEY_BYTES)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".key", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key.hex() + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails when another process made it first: use theirs
        except FileExistsError:
            return _parse_key(path, path.read_text())
        except OSError:  # a file system without hard links
            os.replace(tmp, path)
        fsync_dir(path.parent)
        return key
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def secret_values(values: str | None, file: Path | None) -> list[str]:
    """Secret values from a comma-separated setting and a file of one value a line."""
    out = [v.strip() for v in (values or "").split(",") if v.strip()]
    if file is not None:
        out += [line.strip() for line in file.read_text().splitlines() if line.strip()]
    return out
