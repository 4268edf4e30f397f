"""Spend per UTC day, kept at write time, so the Costs page never scans its window.

`spend_day` holds, per day and per (source, agent, model, driver), the token sums by kind, the
cost and the number of sessions: every session of the index counted once, on the day of its
creation (its archiving when the server did not say), under the driver of its cycle. A
session's driver is stored on its index row (`session_index.driver`, resolved by
`driver_of`), so moving a session between drivers when a cycle arrives later is a subtraction
and an addition, never a lookup over the window.

Writers call `apply` in the same transaction as the index row they change: adding what the
row holds now and subtracting what it held before. Rows are upserted by `key` (the canonical
JSON of the group, NULLs included, which a unique index over nullable columns would not
match) in key order, so writers on several instances queue instead of deadlocking, and each
increment is one `INSERT … ON CONFLICT DO UPDATE SET x = x + excluded.x`. A group whose
sessions all moved away keeps a row with a count of 0, which readers skip.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, bindparam, cast, func, null
from sqlalchemy import select as sa_select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.elements import ColumnElement
from sqlmodel import Field, Session, col

from archiver.metrics import TOKEN_KINDS
from telemetry.store.models import Cycle, SessionIndex, Usage
from telemetry.timeutil import as_utc

__all__ = [
    "AMOUNTS",
    "Share",
    "SpendDay",
    "apply",
    "correlated_driver",
    "cost_source",
    "day_expr",
    "driver_expr",
    "driver_of",
    "drivers_of",
    "group_key",
    "share_of",
]

# what a session adds to its group: tokens by kind, cost, one session
AMOUNTS = (*(f"tokens_{k}" for k in TOKEN_KINDS), "cost_usd", "count")

# (day, source, agent, model, driver) -> the amounts, in AMOUNTS order
Share = tuple[tuple[str, str, str | None, str | None, str | None], tuple[float, ...]]


class SpendDay(Usage, table=True):
    """What the sessions of one UTC day cost, per source, agent, model and driver."""

    __tablename__ = "spend_day"
    __table_args__ = (Index("ix_spend_day_day", "day"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=1000, unique=True)
    day: str = Field(max_length=10)  # YYYY-MM-DD, UTC
    source: str = Field(max_length=20)  # opencode or claude, as the Costs page names them
    agent: str | None = Field(default=None, max_length=100)
    model: str | None = Field(default=None, max_length=200)
    driver: str | None = Field(default=None, max_length=100)
    count: int = 0


def cost_source(index_source: str | None) -> str:
    """The Costs page's source of an index row: Claude Code trees are `claude`."""
    return "claude" if index_source == "claude_code" else "opencode"


def group_key(day: str, source: str, agent: str | None, model: str | None, driver: str | None) -> str:
    return json.dumps([day, source, agent, model, driver], separators=(",", ":"))


def share_of(row: Mapping[str, Any]) -> Share:
    """What an index row (its columns by name, `driver` included) adds to the summary."""
    at: datetime = row["created_at"] or row["archived_at"]
    group = (
        as_utc(at).strftime("%Y-%m-%d"),
        cost_source(row.get("source")),
        row.get("agent"),
        row.get("model"),
        row.get("driver"),
    )
    amounts = tuple(float(row[a]) if a == "cost_usd" else int(row[a] or 0) for a in AMOUNTS[:-1])
    return group, (*amounts, 1)


def day_expr(dialect: str, ts: Any) -> ColumnElement[Any]:
    """The UTC day of a stored time, in SQL, as `share_of` names it."""
    if dialect == "postgresql":
        return func.to_char(func.timezone("UTC", ts), "YYYY-MM-DD")
    return func.strftime("%Y-%m-%d", ts)  # SQLite stores UTC text; strftime reads it


def _newest_driver(match: ColumnElement[bool]) -> Any:
    c = Cycle
    newest = col(c.started_at).desc(), col(c.id).desc()
    return sa_select(col(c.driver)).where(match).order_by(*newest).limit(1).scalar_subquery()


def driver_expr(cycle_id: Any, label: Any, session_id: Any, root_session_id: Any) -> Any:
    """A session's driver: the newest cycle named by its `cycle_id`, else by its label (a label
    that is a cycle id), else the newest cycle posted with its own id, else with its root's.
    Columns give the correlated form for a whole table; values give one session's."""
    return func.coalesce(
        _newest_driver(col(Cycle.cycle_id) == cycle_id),
        _newest_driver(col(Cycle.cycle_id) == label),
        _newest_driver(col(Cycle.session_id) == session_id),
        _newest_driver(col(Cycle.session_id) == root_session_id),
        cast(null(), String),
    )


@functools.cache
def _driver_statement() -> Any:
    # built and compiled once: a bulk import asks for thousands of rows' drivers
    names = ("cycle_id", "label", "session_id", "root_session_id")
    return sa_select(driver_expr(*(bindparam(n, type_=String) for n in names)))


def driver_of(db: Session, row: Mapping[str, Any]) -> str | None:
    """The driver of one session from its `cycle_id`, `label`, `session_id`, `root_session_id`
    (a missing value names no cycle)."""
    values = {n: row.get(n) for n in ("cycle_id", "label", "session_id", "root_session_id")}
    value: str | None = db.connection().execute(_driver_statement(), values).scalar()
    return value


def drivers_of(db: Session, rows: Iterable[Mapping[str, Any]]) -> list[str | None]:
    """`driver_of` each row; no lookup at all while the store holds no cycle (an import into a
    store that no dispatcher writes to)."""
    rows = list(rows)
    conn = db.connection()
    if rows and conn.execute(sa_select(col(Cycle.id)).limit(1)).first() is None:
        return [None] * len(rows)
    return [driver_of(db, r) for r in rows]


def correlated_driver() -> Any:
    si = SessionIndex
    return driver_expr(col(si.cycle_id), col(si.label), col(si.session_id), col(si.root_session_id))


@functools.cache
def _upsert_statement(dialect: str) -> Any:
    table = SpendDay.__table__  # type: ignore[attr-defined]
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table)
    return stmt.on_conflict_do_update(
        index_elements=["key"], set_={a: table.c[a] + stmt.excluded[a] for a in AMOUNTS}
    )


def apply(db: Session, added: Iterable[Share] = (), removed: Iterable[Share] = ()) -> None:
    """Add `added` and subtract `removed` in one statement, groups in key order."""
    net: dict[str, tuple[tuple[Any, ...], list[float]]] = {}
    for sign, shares in ((1, added), (-1, removed)):
        for group, amounts in shares:
            key = group_key(*group)
            acc = net.setdefault(key, (group, [0] * len(AMOUNTS)))[1]
            for i, v in enumerate(amounts):
                acc[i] += sign * v
    rows = []
    for key in sorted(net):
        group, acc = net[key]
        if not any(acc):
            continue  # a row written again unchanged
        day, source, agent, model, driver = group
        rows.append(
            {"key": key, "day": day, "source": source, "agent": agent, "model": model, "driver": driver}
            | {a: (float(v) if a == "cost_usd" else int(v)) for a, v in zip(AMOUNTS, acc, strict=True)}
        )
    if not rows:
        return
    conn = db.connection()
    conn.execute(_upsert_statement(conn.dialect.name), rows if len(rows) > 1 else rows[0])
