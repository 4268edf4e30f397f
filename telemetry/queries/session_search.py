"""A page of sessions whose title or label holds a text, newest archived first, cheap for common
and rare words alike.

The rule is one predicate on both engines: `lower(title)` or `lower(label)` contains
`lower(q)`, each lowered by the database (`LIKE`; case-insensitive on ASCII letters on SQLite
and in PostgreSQL's C locale). The plain query (every filter, the predicate, ORDER BY
archived_at DESC, id DESC, LIMIT) is the reference: the page returned here is always its rows
in its order. Two ways to find them, tried in turn:

1. Walk: the newest `budget` rows that pass the other filters, through the time-ordered index a
   page without text walks, testing the predicate row by row. A common word fills a page after a
   few dozen rows and no text index is read (reading every match of a common word from the text
   index and sorting them all was the slowest page of the console).
2. Index: when those rows hold less than a page, the rest comes from the text index (PostgreSQL:
   the trigram GIN indexes; SQLite: the FTS5 trigram table), limited to rows older than the last
   one walked. A word that is rare among the newest rows has few matches in all, so reading them
   and sorting them is cheap. The index only proposes candidates; each is tested with the same
   predicate, so the index's own idea of a match (FTS5 also folds non-ASCII case) never changes
   the answer.

On SQLite a probe comes first: FTS5 hands out matches one at a time, so asking it for `PROBE`
of them is cheap for a common text and, for a rare one, is the whole answer (then neither the
walk nor a second reading of the index is needed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, text
from sqlmodel import Session, col, select

from telemetry.store.models import SessionIndex

__all__ = ["PROBE", "WALK_BUDGET", "contains_text", "search_page"]

# Rows walked newest first before the text index takes over. A walk costs 1-3 µs a row, so this
# keeps the walk near 10-30 ms; a word on one row in 200 still fills a page of 50 within it.
WALK_BUDGET = 10_000

# On SQLite, the text index is asked for this many matches first: fewer, and they are all.
PROBE = 500

_ARCHIVED, _ID = col(SessionIndex.archived_at), col(SessionIndex.id)
_WORD = re.compile(r"[0-9A-Za-z]{3,}")
Key = tuple[datetime, int]


def _escape_like(q: str) -> str:
    return q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def contains_text(q: str, entity: Any = SessionIndex) -> ColumnElement[bool]:
    """The search rule: title or label contains `q`, both lowered by the database's `lower()`
    (ASCII letters on SQLite and in PostgreSQL's C locale), so a text always finds itself."""
    pattern = func.lower(f"%{_escape_like(q)}%")
    return or_(
        func.lower(col(entity.title)).like(pattern, escape="\\"),
        func.lower(col(entity.label)).like(pattern, escape="\\"),
    )


def _phrase(q: str) -> str:
    return '"' + q.replace('"', '""') + '"'  # one FTS5 phrase: the trigrams in a row


def _candidates(dialect: str, q: str) -> Any:
    """A condition every match of `q` meets that the text index answers; None when it cannot.

    SQLite: the FTS5 phrase (three characters or more). PostgreSQL: `q` itself, except when it
    holds two or more runs of three or more ASCII letters and digits: then those runs, each as a
    substring. Across a space or a dash pg_trgm adds blank-padded trigrams ("  s", " su") found
    on most rows, and the GIN scan of such a phrase took 50-250 ms at 1,000,000 sessions even
    when one of its words is on no row (its words alone: under 1 ms). With one long word, `q`
    whole is the better filter ("flaky-42": its "42" narrows 1 in 5 to 1 in 5,400).
    """
    if dialect == "sqlite":  # FTS5 folds the case of every letter: it finds all LIKE finds
        if len(q) < 3:
            return None
        return text(
            "session_index.id IN (SELECT rowid FROM session_search WHERE session_search MATCH :fts_q)"
        ).bindparams(fts_q=_phrase(q))
    # Each word is a piece of `q`, lowered by the same `lower()`: a row holding `q` holds it.
    words = sorted(set(_WORD.findall(q)), key=lambda w: (-len(w), w.lower(), w))[:3]
    if len(words) < 2:
        return contains_text(q) if len(q) >= 3 else None
    return or_(
        and_(*(func.lower(col(SessionIndex.title)).like(func.lower(f"%{w}%")) for w in words)),
        and_(*(func.lower(col(SessionIndex.label)).like(func.lower(f"%{w}%")) for w in words)),
    )


def _few_candidates(db: Session, q: str) -> list[int] | None:
    """On SQLite, every row FTS5 matches when there are fewer than `PROBE`; else None.

    FTS5 yields its matches one by one, so asking for a few costs little for a common text
    (0.3-2 ms at 1,000,000 sessions) and gives the whole answer for a rare one (0-15 ms), which
    the walk would have spent its budget on before asking the index anyway. The trigram GIN
    index of PostgreSQL builds its whole bitmap before the first row: no such probe there.
    """
    if db.get_bind().dialect.name != "sqlite" or len(q) < 3:
        return None
    probe = text("SELECT rowid FROM session_search WHERE session_search MATCH :fts_q LIMIT :n")
    ids = [int(r[0]) for r in db.connection().execute(probe, {"fts_q": _phrase(q), "n": PROBE}).all()]
    return ids if len(ids) < PROBE else None


def _at_or_after(key: Key) -> ColumnElement[bool]:
    """(archived_at, id) >= key in newest-first order: the rows a walk down to `key` saw."""
    archived, rid = _ARCHIVED, _ID
    return and_(archived >= key[0], or_(archived > key[0], rid >= key[1]))


def _before(key: Key) -> ColumnElement[bool]:
    archived, rid = _ARCHIVED, _ID
    return or_(archived < key[0], and_(archived == key[0], rid < key[1]))


def _edge(db: Session, conds: Sequence[Any], budget: int) -> Key | None:
    """The key of the `budget`-th newest row passing `conds`; None when there are fewer. Both
    engines read it from the filter's index alone."""
    stmt = select(_ARCHIVED, _ID).where(*conds).order_by(_ARCHIVED.desc(), _ID.desc())
    row = db.exec(stmt.offset(budget - 1).limit(1)).first()
    return (row[0], row[1] or 0) if row is not None else None


def _ids(db: Session, stmt: Any) -> list[int]:
    return [int(i) for i in db.exec(stmt).all()]


def _walk(db: Session, conds: Sequence[Any], q: str, budget: int, want: int) -> list[int]:
    """Ids of the matches among the newest `budget` rows passing `conds`, newest first, at most
    `want`. It reads only the key, title and label: on SQLite, from the index of migration 0016
    alone when no other filter needs a column of the row."""
    order = (_ARCHIVED.desc(), _ID.desc())
    cols = (_ID, _ARCHIVED, col(SessionIndex.title), col(SessionIndex.label))
    if db.get_bind().dialect.name == "sqlite":
        stmt = select(_ID).where(*conds, contains_text(q)).order_by(*order)
        return _ids(db, stmt.limit(want))
    # The LIMIT inside fences the walk on PostgreSQL: the planner cannot answer it from the
    # trigram index (it did for a search it thought rare: 100-250 ms), and the outer query
    # reads the walk in its order and stops at `want` matches. (SQLite would sort it again.)
    newest = select(*cols).where(*conds).order_by(*order).limit(budget).subquery("newest")
    stmt = select(newest.c.id).where(contains_text(q, newest.c))
    stmt = stmt.order_by(newest.c.archived_at.desc(), newest.c.id.desc()).limit(want)
    return _ids(db, stmt)


def _from_index(db: Session, conds: Sequence[Any], q: str, edge: Key, want: int) -> list[int]:
    """Ids of the matches older than `edge`, newest first, at most `want`, found through the
    text index."""
    dialect = db.get_bind().dialect.name
    where = [*conds, _before(edge), contains_text(q)]
    candidates = _candidates(dialect, q)
    if candidates is None:  # too short for the index: the plain query
        stmt = select(_ID).where(*where).order_by(_ARCHIVED.desc(), _ID.desc())
        return _ids(db, stmt.limit(want))
    # MATERIALIZED: the planner plans the matches alone, from the text index, and cannot turn
    # the page into a walk of the time index that it expects to stop early (it would not).
    hits = (
        select(_ID.label("id"), _ARCHIVED.label("at"))
        .where(candidates, *where)
        .cte("hits")
        .prefix_with("MATERIALIZED")
    )
    stmt = select(hits.c.id).order_by(hits.c.at.desc(), hits.c.id.desc()).limit(want)
    return _ids(db, stmt)


def search_page(
    db: Session, conds: Sequence[Any], q: str, want: int, budget: int | None = None
) -> list[SessionIndex]:
    """Up to `want` rows passing `conds` whose title or label contains `q`, newest archived
    first: exactly the plain query's rows (see the module's docstring)."""
    budget = budget or WALK_BUDGET
    few = _few_candidates(db, q)
    if few is not None:  # a rare text: its every candidate is known, the page is among them
        if not few:
            return []
        stmt = select(SessionIndex).where(*conds, _ID.in_(few), contains_text(q))
        return list(db.exec(stmt.order_by(_ARCHIVED.desc(), _ID.desc()).limit(want)).all())
    # The edge splits the rows in two by key, so the walk and the index never see the same row.
    edge = _edge(db, conds, budget)
    ids = _walk(db, [*conds, _at_or_after(edge)] if edge is not None else conds, q, budget, want)
    if len(ids) < want and edge is not None:  # not a full page, and rows the walk did not see
        ids += _from_index(db, conds, q, edge, want - len(ids))
    if not ids:
        return []
    rows = db.exec(select(SessionIndex).where(_ID.in_(ids))).all()
    return sorted(rows, key=lambda r: (r.archived_at, r.id), reverse=True)
