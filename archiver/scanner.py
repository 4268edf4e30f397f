"""Find every match of a set of rules in a text: one pass per rule with `re`, or one pass for
all the rules' anchors with hyperscan (when installed) and the patterns tried only there."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

from archiver.rules import Rule

__all__ = ["Scanner", "class_runs"]

# a region pattern that is one character class repeated at least N times
_RUN = re.compile(rb"(\[[^\]]+\])\{(\d+),\}")


Runs = Callable[[bytes], list[tuple[int, int]]]


def class_runs(pattern: bytes) -> Runs | None:
    """For a region pattern ``[class]{N,}``, a function giving the same spans as its
    ``finditer`` in two passes of C code (a byte translation, then substring searches), which
    the regex engine, retrying at every byte of each shorter run, is several times slower
    at; None for any other pattern."""
    m = _RUN.fullmatch(pattern)
    if m is None:
        return None
    member = re.compile(m[1])
    table = bytes(0x61 if member.fullmatch(bytes([b])) else 0x2E for b in range(256))
    need = b"a" * int(m[2])

    def runs(text: bytes, table: bytes = table, need: bytes = need) -> list[tuple[int, int]]:
        mask = text.translate(table)
        out: list[tuple[int, int]] = []
        pos = 0
        while (start := mask.find(need, pos)) != -1:
            end = mask.find(b".", start + len(need))
            end = len(mask) if end == -1 else end
            out.append((start, end))
            pos = end
        return out

    return runs


def _finds(text: bytes, needle: bytes) -> Iterator[int]:
    pos = text.find(needle)
    while pos != -1:
        yield pos
        pos = text.find(needle, pos + 1)


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


class _Compiled:
    """Patterns compiled the first time they are used: a redactor has some sixty, compiling
    them all takes most of a second, and an import's transcripts need only the few whose
    anchors they hold."""

    def __init__(self, patterns: list[tuple[bytes, int] | None]) -> None:
        self._patterns = patterns
        self._done: list[re.Pattern[bytes] | None] = [None] * len(patterns)

    def __getitem__(self, i: int) -> re.Pattern[bytes]:
        got = self._done[i]
        if got is None:
            pattern = self._patterns[i]
            if pattern is None:
                raise KeyError(i)
            got = self._done[i] = re.compile(*pattern)
        return got


class Scanner:
    """(rule index, start, end) of the secret group of every match of every rule. Both
    engines give the same matches; a rule without anchors is a plain scan in both."""

    def __init__(self, rules: tuple[Rule, ...], engine: str = "auto") -> None:
        self._rules = rules
        # plain scan: case-insensitive rules run on bytes.lower() with lower-case patterns,
        # which keeps the regex engine on its fast literal-prefix search
        self._search = _Compiled([(r.pattern, 0) for r in rules])
        # anchored scan: the same patterns tried only where an anchor was found
        self._match = _Compiled([(r.pattern, re.IGNORECASE if r.caseless else 0) for r in rules])
        self._regions = [(r.regions, 0) if r.regions else None for r in rules]
        self._region_re = _Compiled(self._regions)
        self._runs = [class_runs(r.regions) if r.regions else None for r in rules]
        self._hs = _anchor_database(rules) if engine != "re" else None
        self._anchors = [(i, len(a)) for i, r in enumerate(rules) for a in r.anchors]
        self._hs_lock = threading.Lock()
        # patterns that start with a class or a group: no literal prefix for the regex engine
        self._by_anchor = [bool(r.anchors) and r.pattern[:1] in (b"(", b"[") for r in rules]
        self._lower_anchors = [tuple({a.lower() if r.caseless else a for a in r.anchors}) for r in rules]

    @property
    def engine(self) -> str:
        return "hyperscan" if self._hs is not None else "re"

    def spans(self, text: bytes) -> list[tuple[int, int, int]]:
        return self._spans_hs(text, self._hs) if self._hs is not None else self._spans_re(text)

    def _scan(self, i: int, text: bytes, lowered: bytes | None) -> list[tuple[int, int, int]]:
        """Every match of rule ``i``, left to right, overlapping ones included."""
        rule, pat = self._rules[i], self._search[i]
        hay = lowered if rule.caseless and lowered is not None else text
        out: list[tuple[int, int, int]] = []
        regions, runs = self._regions[i], self._runs[i]
        # (start, end) of the stretches to search; the byte after each stays in view, for
        # a lookahead, and a lookbehind sees what lies before its start anyway
        if regions is None and self._by_anchor[i]:
            # every match starts with an anchor (as the hyperscan scan relies on): find them
            # with bytes.find and try the pattern there; a pattern whose start is a class or an
            # alternation has no literal prefix for the regex engine's fast search
            for start in sorted({p for a in self._lower_anchors[i] for p in _finds(hay, a)}):
                if (m := pat.match(hay, start)) is not None:
                    out.append((i, *m.span(rule.group)))
            return out
        if regions is None:
            spans: Any = ((0, len(hay)),)
        elif runs is not None:
            spans = ((s, e + 1) for s, e in runs(hay))
        else:
            spans = ((m.start(), m.end() + 1) for m in self._region_re[i].finditer(hay))
        for start, end in spans:
            pos = start
            while (m := pat.search(hay, pos, end)) is not None:
                out.append((i, *m.span(rule.group)))
                pos = m.start() + 1
        return out

    def _spans_re(self, text: bytes) -> list[tuple[int, int, int]]:
        lowered = text.lower() if any(r.caseless for r in self._rules) else None
        return [s for i in range(len(self._rules)) for s in self._scan(i, text, lowered)]

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
        for i, r in enumerate(self._rules):
            if not r.anchors:
                out += self._scan(i, text, None)
        return out
