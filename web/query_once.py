"""A query parameter the API documents as taking one value, given more than once, is refused.

`?limit=5&limit=500` is ambiguous: FastAPI keeps the last value, so a script that appended a
parameter instead of replacing it got an answer to a question it did not ask. The door
(`web.guard`) refuses it with a 422 naming the parameter. What takes one value is read from the
served OpenAPI document: every documented query parameter whose schema is not an array (the
Costs page's `by` is one). Undocumented routes and parameters are left to their routes.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl

from starlette.types import Scope

__all__ = ["repeated_field"]

_SingleValued = list[tuple[re.Pattern[str], frozenset[str]]]


def _single_valued(openapi: dict[str, Any]) -> _SingleValued:
    """(path pattern, names of its one-value query parameters) of each documented path."""
    out: _SingleValued = []
    for path, operations in openapi.get("paths", {}).items():
        names = {
            p["name"]
            for op in operations.values()
            if isinstance(op, dict)
            for p in op.get("parameters", [])
            if p.get("in") == "query" and "'array'" not in repr(p.get("schema", {}))
        }
        if names:
            pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", re.escape(path))
            out.append((re.compile(pattern + r"\Z"), frozenset(names)))
    return out


def _table(app: Any) -> _SingleValued:
    table: _SingleValued | None = getattr(app.state, "octel_single_valued", None)
    if table is None:
        table = _single_valued(app.openapi())
        app.state.octel_single_valued = table
    return table


def repeated_field(scope: Scope) -> str | None:
    """`query.<name>` of the first parameter given twice that its route documents as taking
    one value; None otherwise (and at once for a query without a second parameter)."""
    query = scope.get("query_string", b"")
    if b"&" not in query and b";" not in query:
        return None
    seen: set[str] = set()
    twice: list[str] = []
    pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True, encoding="utf-8", errors="replace")
    for name, _ in pairs:
        if name in seen and name not in twice:
            twice.append(name)
        seen.add(name)
    if not twice:
        return None
    path = scope["path"]
    for pattern, names in _table(scope["app"]):
        if pattern.match(path):
            for name in twice:
                if name in names:
                    return f"query.{name}"
    return None
