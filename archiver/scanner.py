"""Find every match of a set of rules in a text: one pass per rule with `re`, or one pass for
all the rules' anchors with hyperscan (when installed) and the patterns tried only there."""

from __future__ import annotations

import re
import threading
from typing import Any

from archiver.rules import Rule

__all__ = ["Scanner"]


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


class Scanner:
    """(rule index, start, end) of the secret group of every match of every rule. Both
    engines give the same matches; a rule without anchors is a plain scan in both."""

    def __init__(self, rules: tuple[Rule, ...], engine: str = "auto") -> None:
        self._rules = rules
        # plain scan: case-insensitive rules run on bytes.lower() with lower-case patterns,
        # which keeps the regex engine on its fast literal-prefix search
        self._search = [re.compile(r.pattern) for r in rules]
        # anchored scan: the same patterns tried only where an anchor was found
        self._match = [re.compile(r.pattern, re.IGNORECASE if r.caseless else 0) for r in rules]
        self._regions = [re.compile(r.regions) if r.regions else None for r in rules]
        self._hs = _anchor_database(rules) if engine != "re" else None
        self._anchors = [(i, len(a)) for i, r in enumerate(rules) for a in r.anchors]
        self._hs_lock = threading.Lock()

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
        regions = self._regions[i]
        # (start, end) of the stretches to search; the byte after each stays in view, for
        # a lookahead, and a lookbehind sees what lies before its start anyway
        spans = (
            ((0, len(hay)),) if regions is None else ((m.start(), m.end() + 1) for m in regions.finditer(hay))
        )
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
