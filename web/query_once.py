"""The query parameters a read route takes, checked at the door against the served OpenAPI
document: a parameter the route does not know, or one it takes once given twice, is refused.

`?limit=5&limit=500` is ambiguous: FastAPI keeps the last value, so a script that appended a
parameter instead of replacing it got an answer to a question it did not ask. `/api/cycles?
cycle_id=x` was worse: the unknown name was dropped and every cycle came back, as if the filter
had matched. The door (`web.guard`) refuses both with a 422 naming the parameter, as the ingest
side refuses an unknown body field. What a route takes is read once from the OpenAPI document:
its documented query parameters, and of those the ones whose schema is not an array take one
value (the Costs page's `by` takes several). Unknown names are refused on the read API
(`GET /api/…`); undocumented routes are left to themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NamedTuple
from urllib.parse import parse_qsl

from starlette.types import Scope

from archiver.shape import RawJson
from web.app_state import app_state

__all__ = ["query_refusal"]

_READ_API = "/api/"
_READS = frozenset({"GET", "HEAD"})


class _Route(NamedTuple):
    pattern: re.Pattern[str]
    names: frozenset[str]  # every documented query parameter of its GET
    single: frozenset[str]  # those that take one value
    reads: bool  # the path has a GET


def _routes(openapi: RawJson) -> list[_Route]:
    out: list[_Route] = []
    for path, operations in openapi.get("paths", {}).items():
        params = [
            p
            for op in operations.values()
            if isinstance(op, dict)
            for p in op.get("parameters", [])
            if p.get("in") == "query"
        ]
        get = operations.get("get") if isinstance(operations.get("get"), dict) else None
        read_names = frozenset(p["name"] for p in (get or {}).get("parameters", []) if p.get("in") == "query")
        single = frozenset(p["name"] for p in params if "'array'" not in repr(p.get("schema", {})))
        pattern = re.compile(re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path)) + r"\Z")
        out.append(_Route(pattern, read_names, single, get is not None))
    return out


@dataclass(frozen=True, slots=True)
class _Table:
    """The app's read routes, read once from its OpenAPI document."""

    routes: list[_Route]


def _table(app: Any) -> list[_Route]:
    return app_state(app).made(_Table, lambda: _Table(_routes(app.openapi()))).routes


def query_refusal(scope: Scope) -> tuple[str, str] | None:
    """(`query.<name>`, why) for the first parameter the route does not take, or takes once and
    was given twice; None otherwise (at once for a request without a query)."""
    query = scope.get("query_string", b"")
    if not query:
        return None
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True, encoding="utf-8", errors="replace")
    names = [name for name, _ in pairs]
    path = scope["path"]
    routes = [r for r in _table(scope["app"]) if r.pattern.match(path)]
    if not routes:
        return None
    if path.startswith(_READ_API) and scope["method"] in _READS and any(r.reads for r in routes):
        known = frozenset().union(*(r.names for r in routes))
        for name in names:
            if name not in known:
                return f"query.{name}", "not a parameter of this route" + _taken(known)
    single = frozenset().union(*(r.single for r in routes))
    seen: set[str] = set()
    for name in names:
        if name in seen and name in single:
            return f"query.{name}", "given more than once; this parameter takes one value"
        seen.add(name)
    return None


def _taken(known: frozenset[str]) -> str:
    return f" (it takes: {', '.join(sorted(known))})" if known else " (it takes none)"
