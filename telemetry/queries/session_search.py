"""A page of sessions whose title or label holds a text, newest archived first, cheap for common
and rare words alike.

The rule is one predicate on both engines: `lower(title)` or `lower(label)` contains
`lower(q)`, each lowered by the database (`LIKE`; case-insensitive on ASCII letters on SQLite
and in PostgreSQL's C locale). The plain query (every filter, the predicate, ORDER BY
archived_at DESC, id DESC, LIMIT) is the reference: the page returned here is always its rows
in its order. Three ways to find them, tried in turn:

1. Index first, for a rare text: the text index (SQLite: the FTS5 trigram table; PostgreSQL:
   the GIN index of every run of three characters, migration 0017) is asked for the rows
   holding the text's rarest-looking runs (`search_trigrams`). SQLite probes FTS5 for `PROBE`
   of them; PostgreSQL asks its planner how many it expects. Few: they are the page's only
   candidates, and nothing else is read.
2. Walk: the newest `budget` rows that pass the other filters, through the time-ordered index a
   page without text walks, testing the predicate row by row. A common word fills a page after a
   few dozen rows and no text index is read (reading every match of a common word from the text
   index and sorting them all was the slowest page of the console).
3. Index for the rest: when the walk holds less than a page, the rest comes from the text
   index, limited to rows older than the last one walked. A text that is rare among the newest
   rows has few matches in all, so reading them and sorting them is cheap.

The index only proposes candidates; each is tested with the same predicate, so the index's own
idea of a match (FTS5 also folds non-ASCII case) never changes the answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, text
from sqlalchemy.dialects import postgresql
from sqlalchemy.orm import aliased
from sqlalchemy.sql import visitors
from sqlalchemy.sql.expression import ColumnClause
from sqlmodel import Session, col, select

from telemetry.queries.search_trigrams import rare_runs
from telemetry.store.models import SessionIndex

__all__ = ["PROBE", "RARE_ROWS", "WALK_BUDGET", "contains_text", "search_page"]

# Rows walked newest first before the text index takes over. A walk costs 1-3 µs a row, so this
# keeps the walk near 10-30 ms; a word on one row in 200 still fills a page of 50 within it.
WALK_BUDGET = 10_000

# SQLite: FTS5 is asked for this many candidates first; fewer, and they are all (1-2 ms).
PROBE = 2_000

# PostgreSQL: the text index goes first when the planner expects at most this many candidates.
# Each costs 2-5 µs (a table row read and the text tested), so the page stays near 10 ms, with
# room for the estimate's errors (the runs of a phrase are not independent).
RARE_ROWS = 2_000

# SQLite: with a filter the walk's index lacks, FTS5 is asked to count this many candidates; fewer,
# and the walk reads only them from the table.
PROBE_MORE = 20_000

_ARCHIVED, _ID = col(SessionIndex.archived_at), col(SessionIndex.id)
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


def _fts_query(q: str) -> str:
    """The FTS5 query for the candidates of `q`: its rarest-looking runs of three characters,
    each a one-trigram phrase, all required (see `search_trigrams`); FTS5 folds the case of
    every letter, so a run of `q` as typed finds every row LIKE finds."""
    runs = rare_runs(q)
    return " AND ".join(_phrase(q[i : i + 3]) for i in runs) if runs else _phrase(q)


# The index expression of migration 0017: every run of three characters of the lowered title
# and label. The query must spell it exactly so for PostgreSQL to use the index.
_ROW_RUNS = func.octel_trigrams(func.lower(col(SessionIndex.title))).op("||")(
    func.octel_trigrams(func.lower(col(SessionIndex.label)))
)


def _pg_runs(q: str) -> Any:
    """Runs of `lower(q)` as PostgreSQL lowers it: the rarest-looking ones, cut from it by
    position when `q` is ASCII (lowering keeps every character in place), else all of them."""
    low = func.lower(q)
    runs = rare_runs(q) if q.isascii() else []
    if not runs:
        return func.octel_trigrams(low)
    return postgresql.array([func.substr(low, i + 1, 3) for i in runs])


def _candidates(dialect: str, q: str) -> Any:
    """A condition every match of `q` meets that a text index answers; None when it cannot (a
    text under three characters). SQLite: the FTS5 table; PostgreSQL: the GIN index of 0017."""
    if len(q) < 3:
        return None
    if dialect == "sqlite":
        return text(
            "session_index.id IN (SELECT rowid FROM session_search WHERE session_search MATCH :fts_q)"
        ).bindparams(fts_q=_fts_query(q))
    return _ROW_RUNS.op("@>")(_pg_runs(q))


def _page(db: Session, conds: Sequence[Any], q: str, candidates: Any, want: int) -> list[SessionIndex]:
    """The page among the rows meeting `candidates`, read through the text index alone.
    MATERIALIZED: the planner plans the matches alone, from the text index, and cannot turn
    the page into a walk of the time index that it expects to stop early (it would not)."""
    hits = (
        select(_ID.label("id"), _ARCHIVED.label("at"))
        .where(candidates, *conds, contains_text(q))
        .cte("hits")
        .prefix_with("MATERIALIZED")
    )
    page = select(hits.c.id).order_by(hits.c.at.desc(), hits.c.id.desc()).limit(want).subquery()
    stmt = select(SessionIndex).join(page, page.c.id == _ID).order_by(_ARCHIVED.desc(), _ID.desc())
    return list(db.exec(stmt).all())


def _index_first(db: Session, conds: Sequence[Any], q: str, want: int) -> list[SessionIndex] | None:
    """The page, when the text index says `q` is rare; None when it is not (or too short).

    SQLite: FTS5 yields its candidates one by one, so asking it for `PROBE` of them is cheap for
    a common text and, for a rare one, gives them all. PostgreSQL's GIN index builds its whole
    bitmap before the first row, so no such probe: the planner's estimate of the candidates
    (from the statistics ANALYZE keeps of the index's runs) decides, against `RARE_ROWS`.
    """
    dialect = db.get_bind().dialect.name
    candidates = _candidates(dialect, q)
    if candidates is None:
        return None
    if dialect == "sqlite":
        probe = text("SELECT rowid FROM session_search WHERE session_search MATCH :fts_q LIMIT :n")
        params = {"fts_q": _fts_query(q), "n": PROBE}
        few = [int(r[0]) for r in db.connection().execute(probe, params).all()]
        if len(few) >= PROBE:
            return None
        if not few:
            return []
        stmt = select(SessionIndex).where(*conds, _ID.in_(few), contains_text(q))
        return list(db.exec(stmt.order_by(_ARCHIVED.desc(), _ID.desc()).limit(want)).all())
    if _estimate(db, select(_ID).where(candidates)) > RARE_ROWS:
        return None
    return _page(db, conds, q, candidates, want)


def _estimate(db: Session, stmt: Any) -> float:
    """The PostgreSQL planner's estimate of the rows `stmt` returns (EXPLAIN: nothing is read)."""
    compiled = stmt.compile(dialect=db.get_bind().dialect)
    explain = "EXPLAIN (FORMAT JSON) " + str(compiled)
    plan = db.connection().exec_driver_sql(explain, compiled.params).scalar_one()
    return float(plan[0]["Plan"]["Plan Rows"])


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


def _walk_sqlite(
    db: Session, conds: Sequence[Any], q: str, budget: int, want: int
) -> tuple[list[SessionIndex], Key | None]:
    """The matches among the newest `budget` rows passing `conds`, newest first, at most
    `want`, and the key that bounds the walk (an inner LIMIT would make SQLite sort the walk
    again). It reads only the key, title and label: from the index of migration 0016 alone
    when no other filter needs a column of the row. When one does, each row would be read from
    the table to test it (5 µs a row: 25 ms for a phrase on 1 row in 130); then, if FTS5 holds
    fewer than `PROBE_MORE` candidates, only the candidates are read (the walk reads the
    filter's index and looks each key up among the candidates, which FTS5 lists in 1-4 ms)."""
    edge = _edge(db, conds, budget)
    walk = [*conds, _at_or_after(edge)] if edge is not None else list(conds)
    if len(q) >= 3 and _reads_table(conds) and _fts_count(db, q, PROBE_MORE) < PROBE_MORE:
        # The unary plus keeps SQLite from reading the rows through the candidates instead.
        among = "+session_index.id IN (SELECT rowid FROM session_search WHERE session_search MATCH :fts_q)"
        walk.append(text(among).bindparams(fts_q=_fts_query(q)))
    stmt = select(_ID).where(*walk, contains_text(q)).order_by(_ARCHIVED.desc(), _ID.desc())
    ids = _ids(db, stmt.limit(want))
    rows = list(db.exec(select(SessionIndex).where(_ID.in_(ids))).all()) if ids else []
    return sorted(rows, key=lambda r: (r.archived_at, r.id), reverse=True), edge


def _reads_table(conds: Sequence[Any]) -> bool:
    """Whether a filter names a column the walk's index (0016: key, title, label) lacks."""
    names = {c.name for cond in conds for c in visitors.iterate(cond) if isinstance(c, ColumnClause)}
    return bool(names - {"archived_at", "id"})


def _fts_count(db: Session, q: str, cap: int) -> int:
    """How many rows FTS5 proposes for `q`, counted up to `cap`."""
    probe = "SELECT count(*) FROM (SELECT 1 FROM session_search WHERE session_search MATCH :fts_q LIMIT :n)"
    return int(db.connection().execute(text(probe), {"fts_q": _fts_query(q), "n": cap}).scalar_one())


def _walk_postgres(db: Session, conds: Sequence[Any], q: str, budget: int, want: int) -> list[SessionIndex]:
    """The matches among the newest `budget` rows passing `conds`, newest first, at most `want`,
    whole: the walk reads each row from the table anyway, so the page needs no second read.
    The LIMIT inside fences the walk: the planner cannot answer it from a text index (it did
    for a search it thought rare: 100-250 ms), and the outer query reads the walk in its
    order and stops at `want` matches."""
    order = (_ARCHIVED.desc(), _ID.desc())
    walked = select(SessionIndex).where(*conds).order_by(*order).limit(budget).subquery("newest")
    newest = aliased(SessionIndex, walked)
    at, rid = col(newest.archived_at), col(newest.id)
    stmt = select(newest).where(contains_text(q, newest)).order_by(at.desc(), rid.desc()).limit(want)
    return list(db.exec(stmt).all())


def _from_index(db: Session, conds: Sequence[Any], q: str, edge: Key, want: int) -> list[SessionIndex]:
    """The matches older than `edge`, newest first, at most `want`, found through the text
    index (the plain query for a text too short for it)."""
    where = [*conds, _before(edge)]
    candidates = _candidates(db.get_bind().dialect.name, q)
    if candidates is not None:
        return _page(db, where, q, candidates, want)
    stmt = select(SessionIndex).where(*where, contains_text(q)).order_by(_ARCHIVED.desc(), _ID.desc())
    return list(db.exec(stmt.limit(want)).all())


def search_page(
    db: Session, conds: Sequence[Any], q: str, want: int, budget: int | None = None
) -> list[SessionIndex]:
    """Up to `want` rows passing `conds` whose title or label contains `q`, newest archived
    first: exactly the plain query's rows (see the module's docstring)."""
    budget = budget or WALK_BUDGET
    if db.get_bind().dialect.name == "postgresql":
        # Once psycopg prepares a statement, PostgreSQL may plan it for any value (a generic
        # plan): blind to the text, it read a rare phrase's page in 90-340 ms instead of 3 ms
        # from the sixth search on. Plan every statement of this search for its values.
        db.connection().exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")
    first = _index_first(db, conds, q, want)
    if first is not None:  # a rare text: the text index gave the page
        return first
    if db.get_bind().dialect.name == "sqlite":
        rows, edge = _walk_sqlite(db, conds, q, budget, want)
    else:
        rows = _walk_postgres(db, conds, q, budget, want)
        edge = _edge(db, conds, budget) if len(rows) < want else None
    if len(rows) < want and edge is not None:  # not a full page, and rows the walk did not see
        # The edge splits the rows in two by key, so the walk and the index never see the same row.
        rows += _from_index(db, conds, q, edge, want - len(rows))
    return rows
