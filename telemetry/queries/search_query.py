"""The search box's language, parsed: pure, no database.

    words            each must appear in the text (case-insensitive, anywhere: `push` finds `pushed`)
    "exact phrase"   the characters in a row, spaces and punctuation included
    foo*             a word that starts with `foo` (at the text's start or after a space or
                     punctuation)
    key:value        a filter: tool, agent, model, driver, verdict, source, since
                     (`key:"two words"` quotes a value)

Anything else is a word, so every string parses: an unknown `key:value` is a word, an unclosed
quote runs to the end. A query of one bare token may be an id (`ses_…`, a Claude session UUID,
a cycle id): `maybe_id` names it, and the search looks it up before searching text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["FILTER_KEYS", "SearchQuery", "Term", "looks_like_id", "parse_query", "render_query"]

FILTER_KEYS = ("tool", "agent", "model", "driver", "verdict", "source", "since")
TermKind = Literal["word", "phrase", "prefix"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{2,199}")
_SES = re.compile(r"ses_[A-Za-z0-9]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


@dataclass(frozen=True)
class Term:
    text: str
    kind: TermKind = "word"


@dataclass(frozen=True)
class SearchQuery:
    terms: tuple[Term, ...] = ()
    filters: tuple[tuple[str, str], ...] = ()  # (key, value), in the order typed
    maybe_id: str | None = None

    def filter(self, key: str) -> str | None:
        """The last value typed for `key` (a later `agent:` overrides an earlier one)."""
        got = [v for k, v in self.filters if k == key]
        return got[-1] if got else None

    @property
    def empty(self) -> bool:
        return not self.terms and not self.filters


def looks_like_id(token: str) -> bool:
    """An OpenCode session id or a Claude session UUID: always tried as an id first."""
    return bool(_SES.fullmatch(token) or _UUID.fullmatch(token))


def _quoted(q: str, i: int) -> tuple[str, int]:
    """The text of the quote opening at `q[i]` and the index after its close (or the end)."""
    end = q.find('"', i + 1)
    if end < 0:
        return q[i + 1 :], len(q)
    return q[i + 1 : end], end + 1


def _bare(q: str, i: int) -> tuple[str, int]:
    j = i
    while j < len(q) and not q[j].isspace() and q[j] != '"':
        j += 1
    return q[i:j], j


def parse_query(q: str) -> SearchQuery:
    """The query `q` as typed; never raises."""
    terms: list[Term] = []
    filters: list[tuple[str, str]] = []
    i = 0
    while i < len(q):
        if q[i].isspace():
            i += 1
            continue
        if q[i] == '"':
            text, i = _quoted(q, i)
            if text.strip():
                terms.append(Term(text, "phrase"))
            continue
        word, i = _bare(q, i)
        key, sep, value = word.partition(":")
        if sep and key.lower() in FILTER_KEYS:
            if not value and i < len(q) and q[i] == '"':
                value, i = _quoted(q, i)
            if value.strip():
                filters.append((key.lower(), value.strip()))
                continue
        if not word:  # a quote glued to a word: `a"b c"` is the word `a`, then the phrase
            continue
        if word.endswith("*") and word.strip("*"):
            terms.append(Term(word.rstrip("*"), "prefix"))
        elif word.strip("*"):
            terms.append(Term(word))
    only = terms[0] if len(terms) == 1 and not filters else None  # what was read, not typed
    maybe_id = only.text if only and only.kind == "word" and _ID.fullmatch(only.text) else None
    return SearchQuery(tuple(terms), tuple(filters), maybe_id)


def _value(v: str) -> str:
    return f'"{v}"' if any(c.isspace() for c in v) else v


def render_query(query: SearchQuery) -> str:
    """A query text that parses back to `query` (for links and the CLI's echo)."""
    out = [f"{k}:{_value(v)}" for k, v in query.filters]
    for t in query.terms:
        out.append(f'"{t.text}"' if t.kind == "phrase" else f"{t.text}*" if t.kind == "prefix" else t.text)
    return " ".join(out)
