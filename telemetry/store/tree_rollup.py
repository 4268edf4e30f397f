"""Each root's indexed tree kept on its index row, so the Costs page reads the dearest trees of a
window from an index instead of summing every session of every root in it.

`tree_cost_usd`, `tree_tokens` (every kind together) and `tree_session_count` of an index row
are the sums over the index rows that name it as their root (`root_session_id`), itself
included when it is its own root. They differ from `subtree_*`, which the archiver computed
from one archive's walk: a tree archived in parts, a lost subtree indexed on its own, or a
session removed by retention changes the indexed tree, not the walk.

Writers call `refresh_trees` in the transaction that inserts, updates or deletes index rows,
after the write, with the roots of the rows before and after and the written rows' own ids:
each named row's sums are computed again from its tree's rows (a tree is a few rows, found
through the root_session_id index), so they never drift. On PostgreSQL every writer of a
tree's rows first holds `spend:<root id>` (`telemetry.services.spend.spend_links.lock_links`), so a
recomputation sees every committed row of its tree and the next writer of the tree waits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ScalarSelect, func, or_, update
from sqlalchemy import select as sa_select
from sqlmodel import Session

from archiver.metrics import TOKEN_KINDS
from telemetry.store.models import SessionIndex

__all__ = [
    "TREE_COLUMNS",
    "recomputed_tree_values",
    "refresh_all_trees",
    "refresh_trees",
    "tree_sums",
    "wrong_trees",
]

TREE_COLUMNS = ("tree_cost_usd", "tree_tokens", "tree_session_count")
_SI = SessionIndex.__table__  # type: ignore[attr-defined]
_CHUNK = 500
_TOLERANCE_USD = 1e-6


def tree_sums(rows: Any) -> tuple[Any, Any, Any]:
    """SQL sums of cost, tokens and rows over `rows` (a session_index table or alias)."""
    tokens = sum((rows.c[f"tokens_{k}"] for k in TOKEN_KINDS[1:]), rows.c[f"tokens_{TOKEN_KINDS[0]}"])
    return (
        func.coalesce(func.sum(rows.c.cost_usd), 0.0),
        func.coalesce(func.sum(tokens), 0),
        func.count(),
    )


def recomputed_tree_values() -> dict[str, ScalarSelect[Any]]:
    """Each row's tree sums as correlated subqueries over the rows naming it as their root."""
    tree = _SI.alias("tree")
    sums = tree_sums(tree)
    return {
        name: sa_select(expr).where(tree.c.root_session_id == _SI.c.session_id).scalar_subquery()
        for name, expr in zip(TREE_COLUMNS, sums, strict=True)
    }


def refresh_trees(db: Session, session_ids: Iterable[str | None]) -> None:
    """Compute again the tree sums of the index rows with these session ids (absent ones are
    skipped): the roots a write touched, before and after, and the written rows themselves."""
    ids = sorted({s for s in session_ids if s})
    if not ids:
        return
    conn = db.connection()
    values = recomputed_tree_values()
    for i in range(0, len(ids), _CHUNK):
        conn.execute(update(_SI).where(_SI.c.session_id.in_(ids[i : i + _CHUNK])).values(values))


def wrong_trees(db: Session) -> list[str]:
    """The session ids of the rows whose kept tree sums differ from their tree's rows (cost
    to a millionth of a dollar: float sums added in another order differ in their last bits)."""
    tree = _SI.alias("tree")
    cost, tokens, n = tree_sums(tree)
    groups = (
        sa_select(
            tree.c.root_session_id.label("root"), cost.label("cost"), tokens.label("tokens"), n.label("n")
        )
        .group_by(tree.c.root_session_id)
        .subquery("g")
    )
    differs = or_(
        _SI.c.tree_session_count != func.coalesce(groups.c.n, 0),
        _SI.c.tree_tokens != func.coalesce(groups.c.tokens, 0),
        func.abs(_SI.c.tree_cost_usd - func.coalesce(groups.c.cost, 0.0)) > _TOLERANCE_USD,
    )
    stmt = (
        sa_select(_SI.c.session_id)
        .select_from(_SI.outerjoin(groups, groups.c.root == _SI.c.session_id))
        .where(differs)
        .order_by(_SI.c.session_id)
    )
    return list(db.connection().execute(stmt).scalars())


def refresh_all_trees(db: Session) -> int:
    """Sum again every row whose kept tree sums are wrong; how many there were."""
    wrong = wrong_trees(db)
    refresh_trees(db, wrong)
    return len(wrong)
