"""`/api/search`: the JSON twin of the console's search box, over every archived part's text.

A thin route over `telemetry.queries.content_search.search`, which `octel search` calls too.
A bad `since` or `cursor`, or a `since:` in the query the clock cannot read, is a 422 naming
the field.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from telemetry.queries.content_search import SearchError, SearchRequest, search
from telemetry.queries.search_models import SearchPage
from telemetry.timeutil import Since
from web.deps import ReadDbDep
from web.errors import invalid_request

__all__ = ["MAX_LIMIT", "router"]

MAX_LIMIT = 200
router = APIRouter(prefix="/api", tags=["search"])


@router.get("/search", response_model=SearchPage)
def search_parts(
    db: ReadDbDep,
    q: Annotated[
        str,
        Query(
            min_length=1,
            max_length=500,
            description='words, "a phrase", foo*, tool:, agent:, model:, driver:, verdict:, source:, since:',
        ),
    ],
    since: Since = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
    cursor: str | None = None,
) -> SearchPage:
    try:
        return search(db, SearchRequest(q=q, since=since, limit=limit, cursor=cursor))
    except SearchError as e:
        raise invalid_request(f"query.{e.field}", str(e)) from None
