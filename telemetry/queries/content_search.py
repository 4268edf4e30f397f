"""A page of the archived parts that hold a query's words, newest first, on either engine.

The rule is one predicate on both engines, so they give the same answer: every word and phrase
is in `lower(body)` (`LIKE`, ASCII letters folded as both databases fold them); a prefix `foo*`
is at the start of the text or after a space or punctuation; the filters compare the part's
tool and its session's index row. The text index only proposes candidates (SQLite: the FTS5
trigram table of migration 0019, asked for each term's rarest-looking runs of three characters,
`search_trigrams`; PostgreSQL: the pg_trgm GIN index, which `LIKE '%…%'` reads), and each
candidate is tested with the predicate, so the index's own idea of a match never changes the
answer. Pages are keyset-paged on the part's id (the order it was indexed in, newest last).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from sqlalchemy import ColumnElement, func, or_, text
from sqlmodel import Session, col, select

from telemetry.queries.search_models import SearchHit, SearchJump, SearchPage, snippet
from telemetry.queries.search_query import SearchQuery, Term, looks_like_id, parse_query
from telemetry.queries.search_trigrams import rare_runs
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex
from telemetry.store.search_models import SearchPart, SearchPending
from telemetry.timeutil import as_utc, since_value

__all__ = ["Behind", "SearchError", "SearchRequest", "matches", "pending", "search"]

_BODY, _ID = col(SearchPart.body), col(SearchPart.id)
# A prefix starts the text or follows one of these.
_PROBE = text(
    "SELECT rowid FROM session_search_parts WHERE session_search_parts MATCH :fts_q AND rowid < :below "
    "ORDER BY rowid DESC LIMIT :n"
)
# SQLite: candidates asked of FTS5 at a time, newest first; doubled while a page is not full.
PROBE, PROBE_MAX = 500, 50_000
_NO_BOUND = 2**63 - 1
_SEPARATORS = " \n\t\r\"'`()[]{}<>/\\.,;:=|!?@#$&+-~"


class Behind(TypedDict):
    """How far the text index is behind the archive (fields of the search page)."""

    pending_sessions: int
    pending_since: datetime | None


class SearchError(ValueError):
    """A part of the request is invalid; `field` names it (`q`, `cursor`, `since`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class SearchRequest:
    q: str
    since: datetime | None = None
    limit: int = 50
    cursor: str | None = None


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def matches(term: Term) -> ColumnElement[bool]:
    """The predicate a part meets for `term`, the same SQL on both engines."""
    inside = func.lower(_BODY).like(func.lower(f"%{_escape(term.text)}%"), escape="\\")
    if term.kind != "prefix":
        return inside
    low, word = func.lower(_BODY), _escape(term.text)
    starts = [low.like(func.lower(f"{word}%"), escape="\\")]
    starts += [low.like(func.lower(f"%{_escape(ch)}{word}%"), escape="\\") for ch in _SEPARATORS]
    return inside & or_(*starts)  # `inside` first: PostgreSQL's trigram index answers it


def _fts_query(terms: Sequence[Term]) -> str | None:
    """FTS5 candidates of every term of three characters or more: the rarest-looking runs of
    each, all required; None when no term is long enough for the trigram index. Only single
    runs: the table keeps no positions (migration 0027), and FTS5 folds each run's case as it
    folded the text's, so a text whose lowering moves characters gives its first and last."""
    parts: list[str] = []
    for t in terms:
        if len(t.text) < 3:
            continue
        runs = rare_runs(t.text) or sorted({0, len(t.text) - 3})
        pieces = [t.text[i : i + 3] for i in runs]
        parts += ['"' + p.replace('"', '""') + '"' for p in pieces]
    return " AND ".join(parts) if parts else None


def _session_conds(query: SearchQuery) -> list[Any]:
    conds: list[Any] = []
    for key in ("agent", "driver", "verdict", "source"):
        value = query.filter(key)
        if value is not None:
            conds.append(func.lower(col(getattr(SessionIndex, key))) == value.lower())
    model = query.filter("model")
    if model is not None:  # `model:sonnet` finds anthropic/claude-sonnet-4-5
        conds.append(func.lower(col(SessionIndex.model)).like(f"%{_escape(model.lower())}%", escape="\\"))
    return conds


def _conds(query: SearchQuery, since: datetime | None, after: int | None) -> list[Any]:
    conds: list[Any] = [matches(t) for t in query.terms]
    tool = query.filter("tool")
    if tool is not None:
        conds.append(func.lower(col(SearchPart.tool)) == tool.lower())
    if since is not None:
        conds.append(col(SearchPart.at) >= since)
    if after is not None:
        conds.append(col(SearchPart.id) < after)
    session = _session_conds(query)
    if session:
        rows = select(SessionIndex.session_id).where(*session)
        conds.append(col(SearchPart.session_id).in_(rows))
    return conds


def _jump(db: Session, token: str) -> SearchJump | None:
    """The session an id names: a session id, or a cycle id (its root session)."""
    sid = db.exec(select(SessionIndex.session_id).where(col(SessionIndex.session_id) == token)).first()
    if sid is not None:
        return SearchJump(session_id=sid, matched="session")
    if looks_like_id(token):
        return None
    stmt = select(SessionIndex.session_id).where(col(SessionIndex.cycle_id) == token)
    sid = db.exec(stmt.order_by(col(SessionIndex.depth), col(SessionIndex.id))).first()
    return SearchJump(session_id=sid, matched="cycle") if sid is not None else None


def _cursor(cursor: str | None) -> int | None:
    if cursor is None or cursor == "":
        return None
    if not cursor.isdigit() or len(cursor) > 19:
        raise SearchError("cursor", "cursor is not valid; start again without it")
    return int(cursor)


def _since(query: SearchQuery, since: datetime | None) -> datetime | None:
    typed = query.filter("since")
    if typed is None:
        return since
    try:
        got = since_value(typed)
    except ValueError as e:
        raise SearchError("q", f"since: {e}") from None
    return max(got, since) if got is not None and since is not None else got or since


def _hits(db: Session, query: SearchQuery, parts: Sequence[SearchPart]) -> list[SearchHit]:
    sids = sorted({p.session_id for p in parts})
    found = db.exec(select(SessionIndex).where(col(SessionIndex.session_id).in_(sids)))
    rows: dict[str, SessionIndex | LiveSession] = {r.session_id: r for r in found}
    live_only = [s for s in sids if s not in rows]  # live, never archived: named by its live row
    if live_only:
        rows |= {
            r.session_id: r
            for r in db.exec(select(LiveSession).where(col(LiveSession.session_id).in_(live_only)))
        }
    needles = [t.text for t in query.terms]
    out: list[SearchHit] = []
    for p in parts:
        row = rows.get(p.session_id)
        snip, spans = snippet(p.body, needles)
        out.append(
            SearchHit(
                session_id=p.session_id,
                root_session_id=row.root_session_id if row else None,
                title=row.title if row else None,
                agent=row.agent if row else None,
                model=row.model if row else None,
                source=getattr(row, "source", None),
                verdict=getattr(row, "verdict", None),
                live=p.live_message_id is not None,
                turn=p.message_index,
                part=p.part_index,
                kind=p.kind,
                tool=p.tool,
                at=as_utc(p.at) if p.at is not None else None,  # naive on SQLite
                snippet=snip,
                highlights=spans,
            )
        )
    return out


def _probed(db: Session, conds: Sequence[Any], fts: str, after: int | None, want: int) -> list[SearchPart]:
    """SQLite: the page read from FTS5's candidates in rowid order, newest first, a window at
    a time, each window's rows tested with the predicate. A rare text's candidates are all in
    the first window; a common one's page fills from the first few hundred; no candidate list
    is ever read whole, nor the table walked. (Asking SQLite for `id IN (MATCH)` with ORDER
    BY id made it walk the table and test each row: 33 ms for a rare word at 20,000 parts.)"""
    out: list[SearchPart] = []
    below, n = after if after is not None else _NO_BOUND, PROBE
    conn = db.connection()
    while len(out) < want:
        cands = [int(r[0]) for r in conn.execute(_PROBE, {"fts_q": fts, "below": below, "n": n}).all()]
        if cands:
            stmt = select(SearchPart).where(_ID.in_(cands), *conds).order_by(_ID.desc())
            out += db.exec(stmt.limit(want - len(out))).all()
        if len(cands) < n:
            break
        below, n = cands[-1], min(n * 2, PROBE_MAX)
    return out


def pending(db: Session) -> Behind:
    """How far the index is behind the archive: sessions queued, since when (`search_catchup`)."""
    n, since = db.exec(select(func.count(), func.min(col(SearchPending.queued_at)))).one()
    return Behind(pending_sessions=int(n or 0), pending_since=as_utc(since) if since is not None else None)


def search(db: Session, req: SearchRequest) -> SearchPage:
    """The page of parts matching `req.q` (newest indexed first); an id jumps to its session."""
    query = parse_query(req.q)
    after = _cursor(req.cursor)
    since = _since(query, req.since)
    jump = _jump(db, query.maybe_id) if query.maybe_id and after is None else None
    behind = pending(db)
    if query.empty:
        return SearchPage(q=req.q, jump=jump, hits=[], **behind)
    conds = _conds(query, since, after)
    fts = _fts_query(query.terms) if db.get_bind().dialect.name == "sqlite" else None
    if fts is None:
        stmt = select(SearchPart).where(*conds).order_by(_ID.desc())
        parts = list(db.exec(stmt.limit(req.limit + 1)).all())
    else:
        parts = _probed(db, conds, fts, after, req.limit + 1)
    more = len(parts) > req.limit
    parts = parts[: req.limit]
    nxt = str(parts[-1].id) if more and parts else None
    return SearchPage(q=req.q, jump=jump, hits=_hits(db, query, parts), next_cursor=nxt, **behind)
