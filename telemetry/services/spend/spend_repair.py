"""Check the daily spend summary against a recomputation, and rebuild it (`octel doctor`,
`octel doctor --repair`).

The check groups every index row by day, source, agent, model and its stored driver, and
compares with `spend_day` (tokens and counts exactly, cost to a millionth of a dollar: sums of
floats added in another order differ in their last bits), and each row's kept tree sums
(`telemetry.store.tree_rollup`) with its tree's rows; with `drivers`, it also counts the
rows whose stored driver is not the one their cycles give now (a lookup per row: slow at
millions of sessions, so the repair does it and the doctor does not). The rebuild sets every
row's driver from the cycles, writes the summary again from the rows and sums every tree
again, in one transaction;
run it while writes are quiet, as any repair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import case, delete, func, literal, or_, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from telemetry.store.models import SessionIndex
from telemetry.store.spend import AMOUNTS, SpendDay, correlated_driver, day_expr, group_key
from telemetry.store.tree_rollup import refresh_all_trees, wrong_trees

__all__ = ["SpendHealth", "check_spend", "rebuild_spend"]

_TOLERANCE_USD = 1e-6


@dataclass
class SpendHealth:
    groups: int = 0
    wrong: list[str] = field(default_factory=list)  # keys of groups that differ
    stale_drivers: int | None = None  # None: not checked
    wrong_trees: list[str] = field(default_factory=list)  # roots whose kept tree sums differ

    @property
    def ok(self) -> bool:
        return not self.wrong and not self.stale_drivers and not self.wrong_trees


def _recomputed(db: Session) -> dict[str, tuple[Any, ...]]:
    si = SessionIndex
    at = func.coalesce(col(si.created_at), col(si.archived_at))
    source = case((col(si.source) == "claude_code", literal("claude")), else_=literal("opencode"))
    group = [
        day_expr(db.get_bind().dialect.name, at),
        source,
        col(si.agent),
        col(si.model),
        col(si.driver),
    ]
    sums = [func.sum(getattr(si, a)) for a in AMOUNTS if a != "count"]
    stmt = sa_select(*group, *sums, func.count()).group_by(*group)
    out = {}
    for row in db.connection().execute(stmt):
        amounts = tuple(float(v or 0.0) if i == 5 else int(v or 0) for i, v in enumerate(row[5:]))
        out[group_key(*row[:5])] = (*row[:5], *amounts)
    return out


def _stored(db: Session) -> dict[str, tuple[Any, ...]]:
    sd = SpendDay
    cols = [col(sd.key), *(col(getattr(sd, a)) for a in AMOUNTS)]
    return {r[0]: tuple(r[1:]) for r in db.connection().execute(sa_select(*cols).where(col(sd.count) != 0))}


def _same(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    cost = AMOUNTS.index("cost_usd")
    ints_a = [v for i, v in enumerate(a) if i != cost]
    ints_b = [v for i, v in enumerate(b) if i != cost]
    return ints_a == ints_b and abs(a[cost] - b[cost]) <= _TOLERANCE_USD


def _stale_condition() -> Any:
    si = SessionIndex
    lookup = correlated_driver()
    return or_(
        col(si.driver) != lookup,
        col(si.driver).is_(None) & lookup.is_not(None),
        col(si.driver).is_not(None) & lookup.is_(None),
    )


def check_spend(db: Session, *, drivers: bool = False) -> SpendHealth:
    """Compare the summary with the index rows (and, with `drivers`, the rows' drivers with
    their cycles)."""
    want = {k: v[5:] for k, v in _recomputed(db).items()}
    have = _stored(db)
    health = SpendHealth(groups=len(want))
    health.wrong = sorted(
        k for k in want.keys() | have.keys() if not _same(want.get(k, _ZERO), have.get(k, _ZERO))
    )
    health.wrong_trees = wrong_trees(db)
    if drivers:
        stmt = sa_select(func.count()).select_from(SessionIndex).where(_stale_condition())
        health.stale_drivers = int(db.connection().execute(stmt).scalar() or 0)
    return health


_ZERO = tuple(0.0 if a == "cost_usd" else 0 for a in AMOUNTS)


def rebuild_spend(db: Session) -> dict[str, int]:
    """Every row's driver from its cycles, then the summary from the rows; what changed."""
    si = SessionIndex.__table__  # type: ignore[attr-defined]
    conn = db.connection()
    moved = conn.execute(update(si).where(_stale_condition()).values(driver=correlated_driver())).rowcount
    db.flush()
    groups = _recomputed(db)
    conn.execute(delete(SpendDay.__table__))  # type: ignore[attr-defined]
    rows = [
        {"key": k, "day": v[0], "source": v[1], "agent": v[2], "model": v[3], "driver": v[4]}
        | dict(zip(AMOUNTS, v[5:], strict=True))
        for k, v in sorted(groups.items())
    ]
    for i in range(0, len(rows), 5000):
        conn.execute(SpendDay.__table__.insert(), rows[i : i + 5000])  # type: ignore[attr-defined]
    trees = refresh_all_trees(db)
    return {"drivers_changed": int(moved or 0), "groups": len(rows), "trees_changed": trees}
