"""Redaction of secrets from a JSON document before anything touches disk.

It runs on the serialised JSON text (orjson output), which covers every string, keys and
values alike, in one pass per rule at C speed instead of a Python walk over the tree. The
rules scan a view of the text in which the ``\\uXXXX`` and ``\\/`` escapes of printable
characters are decoded at every nesting level (``archiver.jsontext``), so a token spelt with
escapes inside JSON text nested in a string is found too; each find is mapped back to the
text. The document keeps its shape and stays valid JSON:

- a replacement never starts inside an escape sequence (checked for each find), and rule
  patterns never cross a string boundary (their classes exclude ``"`` and ``\\``);
- a configured value found in a JSON number replaces the whole number by a string
  placeholder; a configured value made of digits never fires inside a longer number;
- a find that would span JSON structure (``123,456``) is no value and is left alone;
- finds that overlap are merged into one placeholder (named for the rule listed first), so
  no tail of either is left in clear.

Each secret becomes ``[REDACTED:<rule>:<hmac>]``: the keyed hash of the secret (of the
configured value itself, whichever escaped form was found) lets the same secret be recognised
across archives without being stored.
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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from archiver.cut import cut
from archiver.fsutil import fsync_dir
from archiver.jsontext import View, at_boundary, continues_number, decoded_view, number_around, string_spans
from archiver.rules import Rule, builtin_rules
from archiver.scanner import Scanner

__all__ = [
    "KEY_BYTES",
    "MIN_SECRET_LENGTH",
    "RedactKeyError",
    "RedactionResult",
    "Redactor",
    "load_key",
    "secret_values",
    "token_start",
]

log = logging.getLogger(__name__)

MIN_SECRET_LENGTH = 12
KEY_BYTES = 32
# the bytes JSON text holds outside strings: a find made only of them may sit in a number
_OUTSIDE = frozenset(b"{}[],:0123456789eE.+-truefalsn \t\r\n")
# a configured value that reads as a number (an account number, a PIN-like key): it fires
# only where it is not part of a longer number
_NUMERIC = re.compile(rb"[0-9](?:[0-9 +\-.,:/]*[0-9])?")


def token_start(text: bytes, i: int) -> bool:
    """A token may start at ``text[i]``: not right after an ASCII letter (a prefix inside a
    longer word, ``task-`` holds ``sk-``), unless that letter ends a ``\\n``, ``\\t`` or
    ``\\r`` escape (a line start in multi-line text)."""
    if i == 0 or not (65 <= (c := text[i - 1]) <= 90 or 97 <= c <= 122):
        return True
    return c in b"ntr" and i >= 2 and text[i - 2] == 92 and not _odd_backslashes(text, i - 2)


def _odd_backslashes(text: bytes, i: int) -> bool:
    """The backslash at ``text[i]`` is itself escaped (an odd run of backslashes before it)."""
    n = 0
    while i - 1 - n >= 0 and text[i - 1 - n] == 92:
        n += 1
    return n % 2 == 1


def _escaped_forms(values: Iterable[str], depth: int = 3) -> dict[bytes, str]:
    """Each value as it appears in the decoded view of JSON text, by form: escaped once
    inside a string, and again for each level of JSON text nested in a string (a value with
    ``"`` or ``\\`` changes form at each level)."""
    forms: dict[bytes, str] = {}
    for v in values:
        text = v
        for _ in range(depth):
            text = orjson.dumps(text).decode()[1:-1]
            forms[text.encode()] = v
            forms[decoded_view(text.encode()).text] = v
    return forms


@dataclass(frozen=True)
class RedactionResult:
    data: bytes
    counts: dict[str, int]


@dataclass
class _Find:
    start: int  # in the original text
    end: int
    vstart: int  # in the decoded view
    vend: int
    rule: int
    secret: bytes
    quote: bool = False  # a whole number, replaced by a quoted placeholder


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
        self._forms = _escaped_forms(self.values)
        rules_: list[Rule] = []
        if self._forms:
            # longest first: the alternation takes the whole of a value another one begins
            ordered = tuple(sorted(self._forms, key=lambda f: (-len(f), f)))
            rules_.append(Rule("configured", b"|".join(map(re.escape, ordered)), 0, False, ordered))
        if rules:
            rules_ += builtin_rules()
        self._rules = tuple(rules_)
        self._configured = 0 if self._forms else -1
        self._numeric = any(_NUMERIC.fullmatch(v.encode()) for v in self.values)
        self._scanner = Scanner(self._rules, engine)

    @property
    def engine(self) -> str:
        return self._scanner.engine

    def __reduce__(self) -> tuple[Any, ...]:  # a worker process builds the same redactor again
        return (Redactor, (self._key, self.values))

    def placeholder(self, rule: str, secret: bytes) -> bytes:
        digest = hmac.new(self._key, secret, hashlib.sha256).hexdigest()[:12]
        return f"[REDACTED:{rule}:{digest}]".encode()

    def _find(self, text: bytes, view: View, rule: int, vs: int, ve: int) -> _Find | None:
        """The find at view[vs:ve] placed in the original text, or None when it is no secret
        or would break the document."""
        secret = view.text[vs:ve]
        check = self._rules[rule].check
        if ve <= vs or (check is not None and not check(secret)):
            return None
        if self._rules[rule].boundary and not token_start(view.text, vs):
            return None
        if rule == self._configured:
            value = self._forms[secret].encode()
            if _NUMERIC.fullmatch(value) and continues_number(view.text, vs, ve):
                return None
            secret = value
        start, end = view.original(vs), view.original(ve, end=True)
        if not at_boundary(text, start):
            return None
        return _Find(start, end, vs, ve, rule, secret)

    def _outside_strings(self, view: View, finds: list[_Find]) -> list[_Find]:
        """Finds outside every string become whole numbers or are dropped. Only a find made
        of the bytes JSON has outside strings needs the (whole-text) string scan."""
        maybe = [f for f in finds if all(b in _OUTSIDE for b in view.text[f.vstart : f.vend])]
        if not maybe:
            return finds
        spans = list(string_spans(view.text, max(f.vstart for f in maybe) + 1))
        starts = [s for s, _ in spans]
        out = [f for f in finds if f not in maybe]
        for f in maybe:
            i = bisect.bisect_right(starts, f.vstart) - 1
            if i >= 0 and spans[i][0] < f.vstart and f.vend < spans[i][1]:
                out.append(f)
                continue
            token = number_around(view.text, f.vstart, f.vend)
            if token is not None:
                out.append(
                    _Find(view.original(token[0]), view.original(token[1]), *token, f.rule, f.secret, True)
                )
        return out

    def redact_json(self, text: bytes, counts: Counter[str] | None = None) -> bytes:
        """Redact serialised JSON (UTF-8 bytes as orjson writes them).

        Every pattern scans the same decoded view; overlapping finds become one placeholder,
        named for the rule listed first. A numeric value left alone inside a longer number
        may stand alone once a neighbouring secret is replaced: then the text is scanned again.
        """
        counts = counts if counts is not None else Counter()
        out = self._redact_once(text, counts)
        while self._numeric and out != text:
            text, out = out, self._redact_once(out, counts)
        return out

    def _redact_once(self, text: bytes, counts: Counter[str]) -> bytes:
        # the text as it is, and (when it has escapes to decode) as decoded: which reading is
        # right depends on whether a string holds JSON text, so both are scanned
        finds: list[_Find] = []
        decoded = decoded_view(text)
        for view in (View(text), decoded) if decoded.marks else (decoded,):
            found = [
                f for r, vs, ve in self._scanner.spans(view.text) if (f := self._find(text, view, r, vs, ve))
            ]
            finds += self._outside_strings(view, found) if found else ()
        if not finds:
            return text
        finds.sort(key=lambda f: (f.start, f.rule))
        pieces: list[bytes] = []
        last = 0
        i = 0
        while i < len(finds):
            group = [finds[i]]
            end = finds[i].end
            i += 1
            while i < len(finds) and finds[i].start < end:  # overlapping: one placeholder
                group.append(finds[i])
                end = max(end, finds[i].end)
                i += 1
            first = min(group, key=lambda f: f.rule)
            secret = first.secret if len(group) == 1 else text[group[0].start : end]
            name = self._rules[first.rule].name
            mark = self.placeholder(name, secret)
            pieces += (text[last : group[0].start], b'"' + mark + b'"' if first.quote else mark)
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
        return str(self.redact_obj(s)[0])

    def cut(self, s: str, limit: int, ellipsis: str = "", counts: Counter[str] | None = None) -> str:
        """``s`` redacted, then cut to ``limit`` characters (``archiver.cut.cut``): a secret
        across the cut is replaced whole and no placeholder is split."""
        res = self.redact_bytes(orjson.dumps(s))
        if counts is not None:
            counts.update(res.counts)
        return cut(str(orjson.loads(res.data)), limit, ellipsis)


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
