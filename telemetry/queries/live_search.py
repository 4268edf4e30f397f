"""The console's one search box over the live table (`GET /api/live?q=`): which live sessions a
query names.

The query is the content search's (`search_query`): a live session is kept when each word,
phrase or prefix is in its title, its ids, agent, model, driver or cycle, or in something its
agents said or ran (a part of the content index, live messages included, tested with the same
`matches` rule as `GET /api/search`); an id alone is looked for in the ids only. `tool:` keeps
sessions with a part of that tool; `agent:`, `model:`, `driver:` and `verdict:` compare the
live row; `source:` keeps them all for `opencode` (what `octel watch` follows) and none for
another. `since:` is about when a part was written, which a live row has no one of: ignored.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, func, or_, true
from sqlmodel import col

from telemetry.queries.content_search import matches
from telemetry.queries.search_query import Term, parse_query
from telemetry.store.live_models import LiveSession
from telemetry.store.search_models import SearchPart

__all__ = ["live_where"]

_OWN = ("title", "session_id", "root_session_id", "agent", "model", "driver", "cycle_id")


def _escape(s: str) -> str:
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _said(*conds: Any) -> ColumnElement[bool]:
    return exists().where(col(SearchPart.session_id) == col(LiveSession.session_id), *conds)


def _term(t: Term, said: bool = True) -> ColumnElement[bool]:
    needle = f"%{_escape(t.text.lower())}%"
    own = [func.lower(func.coalesce(getattr(LiveSession, c), "")).like(needle, escape="\\") for c in _OWN]
    return or_(*own, _said(matches(t))) if said else or_(*own)


def live_where(q: str) -> ColumnElement[bool]:
    """The condition a live row meets for the query `q` (true for an empty query)."""
    query = parse_query(q)
    # an id alone names its session (and, a root's, its tree), not every text that mentions it
    alone = query.maybe_id is not None and len(query.terms) == 1
    conds: list[ColumnElement[bool]] = [_term(t, said=not alone) for t in query.terms]
    tool = query.filter("tool")
    if tool is not None:
        conds.append(_said(func.lower(col(SearchPart.tool)) == tool.lower()))
    for key in ("agent", "driver", "verdict"):
        value = query.filter(key)
        if value is not None:
            conds.append(func.lower(col(getattr(LiveSession, key))) == value.lower())
    model = query.filter("model")
    if model is not None:
        conds.append(func.lower(col(LiveSession.model)).like(f"%{_escape(model.lower())}%", escape="\\"))
    source = query.filter("source")
    if source is not None:
        conds.append(true() if source.lower() == "opencode" else false())
    return and_(true(), *conds)
