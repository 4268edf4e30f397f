"""The published OpenAPI document says what the door enforces on every parameter.

`web.guard` refuses a NUL character in any path or query (no store can search or keep one), so
every string parameter the routes leave open says so with a pattern; the fuzz holds the server
to the schema, and a NUL the schema allowed was a 422 it did not document.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi import FastAPI

from archiver.shape import RawJson

__all__ = ["NO_NUL", "say_no_nul"]

NO_NUL = "^[^\\u0000]*$"


def say_no_nul(app: FastAPI) -> None:
    """Wrap ``app.openapi`` so each string path or query parameter with no pattern, enum or
    format of its own carries `NO_NUL`."""
    build: Callable[[], RawJson] = app.openapi

    def openapi() -> RawJson:
        if app.openapi_schema is not None:
            return app.openapi_schema
        doc = build()
        for ops in doc.get("paths", {}).values():
            for op in ops.values():
                for p in op.get("parameters", []) if isinstance(op, dict) else ():
                    if p.get("in") in ("path", "query"):
                        _mark(p.get("schema", {}))
        app.openapi_schema = doc
        return doc

    app.openapi = openapi  # type: ignore[method-assign]


def _mark(schema: RawJson) -> None:
    for alt in schema.get("anyOf", [schema]):
        if alt.get("type") == "string" and not {"pattern", "enum", "format", "const"} & set(alt):
            alt["pattern"] = NO_NUL
