"""The order the sessions of a tree are mapped in: breadth-first from the root (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["root_of", "session_order"]

JsonObj = Mapping[str, Any]


def session_order(docs: Mapping[str, JsonObj], root: str) -> list[tuple[str, str | None]]:
    """(session, parent session) breadth-first from the root; sessions the root does not reach
    (a missing parent, a cycle in the parent links) follow, each under the root."""
    kids: dict[str, list[str]] = {sid: [] for sid in docs}
    for sid in sorted(docs):
        parent = docs[sid].get("parent_session_id")
        if sid != root and isinstance(parent, str) and parent in docs:
            kids[parent].append(sid)
    out: list[tuple[str, str | None]] = []
    seen: set[str] = set()
    for start, parent in [(root, None), *((s, root) for s in sorted(docs) if s != root)]:
        if start in seen:
            continue
        queue: list[tuple[str, str | None]] = [(start, parent)]
        seen.add(start)
        while queue:
            sid, par = queue.pop(0)
            out.append((sid, par))
            for k in kids[sid]:
                if k not in seen:
                    seen.add(k)
                    queue.append((k, sid))
    return out


def root_of(docs: Iterable[JsonObj]) -> str:
    roots = {str(d.get("root_session_id") or d["session_id"]) for d in docs}
    if len(roots) != 1:
        raise ValueError(f"documents of {len(roots)} trees given; export one tree at a time")
    return roots.pop()
