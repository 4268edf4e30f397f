"""Hostile JSON for property tests: any value anywhere, and real documents with values inside
them replaced by it (what a reader of transcripts, exports and event logs must survive)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

__all__ = ["any_json", "replace_inside"]


def any_json(int_bits: int = 64) -> st.SearchStrategy[Any]:
    """Any JSON value, integers up to ``int_bits`` bits either way (past 64: what a reader of
    hostile input meets and a fixed-width column cannot hold)."""
    return st.recursive(
        st.none()
        | st.booleans()
        | st.integers(-(2**int_bits), 2**int_bits)
        | st.floats(allow_nan=False)
        | st.text(max_size=8),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=3),
        max_leaves=6,
    )


def replace_inside(
    draw: st.DrawFn, value: Any, anything: st.SearchStrategy[Any], *, depth: tuple[int, int], odds: int
) -> Any:
    """A copy of ``value`` with at most one value somewhere inside replaced by ``anything``: it
    walks down up to ``depth`` levels, stopping at each with a chance of one in ``odds`` (or at
    a leaf) to replace what it found."""
    value = json.loads(json.dumps(value))
    node = value
    for _ in range(draw(st.integers(*depth))):
        keys = list(node) if isinstance(node, dict) else []
        if isinstance(node, list):
            keys = list(range(len(node)))
        if not keys:
            break
        k = draw(st.sampled_from(keys))
        if draw(st.integers(0, odds - 1)) == 0 or not isinstance(node[k], dict | list):
            node[k] = draw(anything)
            break
        node = node[k]
    return value
