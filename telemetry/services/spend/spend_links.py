"""Keep the daily spend summary (`telemetry.store.spend`) in step with the writes that move it.

Three writes change what the summary holds: an index row written (its usage, its day, its
agent or model, its driver), an index row deleted (retention, repair), and a cycle that names
a session (its driver). Each calls one function here in its own transaction. A deletion also
sums the trees it shortens again (`telemetry.store.tree_rollup`).

Several instances on PostgreSQL: a session's driver is read from the cycles while a cycle's
writer reads the sessions it names, and under READ COMMITTED neither sees the other's
uncommitted row. Both take transaction-scoped advisory locks on the link values they share
(`spend:` + a cycle id or a session id, every key of a transaction at once, sorted), so one
waits for the other and then sees its row; existing index rows are read `FOR UPDATE`, so a
row changed meanwhile is read again as committed. A removal deletes exactly the rows it
locked and subtracts what they held, so a row another writer inserts meanwhile is either
removed and subtracted or kept and counted, never removed and counted.

Every writer takes its locks in one order, so writers queue and never deadlock: the advisory
lock of what it writes (`session:` ids sorted, or `cycle:` and then the cycle's row), the
`spend:` locks, index rows by id, `spend_day` rows by key, then the counters (`aggregate`) by
metric and labels. On SQLite every writer holds the database.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from sqlalchemy import BindParameter, Select, bindparam, delete, or_, text, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from telemetry.services.index.content_index import remove_parts, unqueue
from telemetry.store import pg_direct
from telemetry.store.held import hold
from telemetry.store.locks import held_keys
from telemetry.store.models import SPEND_READ, SessionIndex
from telemetry.store.session_index import IndexRow
from telemetry.store.spend import Share, apply, driver_of, share_of
from telemetry.store.tree_rollup import refresh_trees

__all__ = [
    "SHARE_COLUMNS",
    "cycles_changed",
    "links_deferred",
    "lock_links",
    "lock_trees",
    "remove_sessions",
    "roots_of",
    "rows_for_update",
    "shares",
]

_DEFERRED = "octel_deferred_links"
_SI = SessionIndex.__table__  # type: ignore[attr-defined]
# what a row's share and driver are computed from: the ids its driver is found by, then what
# the Costs page reads of a row (its day, keys and amounts)
SHARE_COLUMNS = ("id", "session_id", "root_session_id", "cycle_id", "label", *SPEND_READ)


def lock_links(db: Session, values: Iterable[str | None]) -> None:
    """Hold `spend:<value>` for each cycle or session id until the transaction ends, in one
    statement, in one order for every writer (PostgreSQL; a no-op on SQLite)."""
    keys = sorted({f"spend:{v}" for v in values if v} - held_keys(db))
    if not keys or db.get_bind().dialect.name != "postgresql":
        return
    calls = ", ".join(f"pg_advisory_xact_lock(hashtextextended(:k{i}, 0))" for i in range(len(keys)))
    db.connection().execute(text(f"SELECT {calls}"), {f"k{i}": k for i, k in enumerate(keys)})


def roots_of(db: Session, session_ids: Iterable[str]) -> list[str]:
    """The root ids the index rows of `session_ids` name now (read without a lock: a writer
    holding their `session:` locks knows no other writer changes them)."""
    stmt = sa_select(_SI.c.root_session_id).where(_SI.c.session_id.in_(list(session_ids)))
    return list(db.connection().execute(stmt).scalars())


def lock_trees(db: Session, session_ids: Iterable[str | None]) -> None:
    """Lock the index rows of `session_ids` (PostgreSQL; a no-op on SQLite), by id, in one
    statement. A writer that rewrites tree sums
    (`refresh_trees`) calls it first with every row it will touch, its own and their roots,
    old and new: taking a root after rows of its own, it held a row of a high id while waiting
    for one of a lower id, and with two writers locking by id (`rows_for_update`) that was a
    deadlock."""
    ids = sorted({s for s in session_ids if s})
    if not ids or db.get_bind().dialect.name != "postgresql":
        return
    db.connection().execute(_LOCK_TREES, {"ids": ids})


_LOCK_TREES = text("SELECT id FROM session_index WHERE session_id = ANY(:ids) ORDER BY id FOR UPDATE")


def rows_for_update(db: Session, stmt: Select[Any]) -> list[IndexRow]:
    """The rows of `stmt` (selecting SHARE_COLUMNS), locked for this transaction, by id."""
    stmt = stmt.order_by(_SI.c.id).with_for_update()
    return [dict(r._mapping) for r in db.connection().execute(stmt)]


def _select() -> Select[Any]:
    return sa_select(*(_SI.c[c] for c in SHARE_COLUMNS))


def shares(rows: Iterable[Mapping[str, Any]]) -> list[Share]:
    return [share_of(r) for r in rows]


def _relink(db: Session, rows: Sequence[IndexRow]) -> None:
    added, removed = [], []
    for row in rows:
        driver = driver_of(db, row)
        if driver == row["driver"]:
            continue
        removed.append(share_of(row))
        row["driver"] = driver
        added.append(share_of(row))
        db.connection().execute(update(_SI).where(_SI.c.id == row["id"]).values(driver=driver))
    apply(db, added, removed)


@contextmanager
def links_deferred(db: Session) -> Iterator[None]:
    """Inside the block, `cycles_changed` only notes its links; they are relinked together
    when it ends, still in the same transaction, in one statement of locks and one read: what
    a batch of cycle writes (`group_commit`) needs once, not once a cycle. The sessions end
    with the drivers the cycles give them at the end, as they would one cycle at a time.
    Nothing is relinked when the block raises."""
    with hold(db, _DEFERRED, list, cycles_changed):
        yield


def cycles_changed(db: Session, links: Sequence[tuple[str, str | None]]) -> None:
    """Cycles (cycle id, session id) were written, moved in time or deleted: every session
    they name takes the driver its cycles now give it, and the summary follows."""
    if not links:
        return
    pending: list[tuple[str, str | None]] | None = db.info.get(_DEFERRED)
    if pending is not None:
        pending.extend(links)
        return
    cycle_ids = sorted({c for c, _ in links})
    session_ids = sorted({s for _, s in links if s})
    lock_links(db, [*cycle_ids, *session_ids])
    conn = db.connection()
    # every batch of cycle writes runs these; kept plans made while `session_index` was young
    # scanned it whole, once for the read and once a relinked row, until ANALYZE ran on it
    with pg_direct.planned_as_run(conn):
        found = conn.execute(_linked(bool(session_ids)), {"cids": cycle_ids, "sids": session_ids})
        _relink(db, [dict(r._mapping) for r in found])


@functools.cache
def _linked(sessions: bool) -> Select[Any]:
    """The index rows the cycles `cids` (and the sessions `sids`) name, as `rows_for_update`
    reads them; built once (every batch of cycle writes reads it)."""
    cids: BindParameter[list[str]] = bindparam("cids", expanding=True)
    conds = [col(SessionIndex.cycle_id).in_(cids), col(SessionIndex.label).in_(cids)]
    if sessions:
        sids: BindParameter[list[str]] = bindparam("sids", expanding=True)
        conds += [col(SessionIndex.session_id).in_(sids), col(SessionIndex.root_session_id).in_(sids)]
    return _select().where(or_(*conds)).order_by(_SI.c.id).with_for_update()


def remove_sessions(db: Session, session_ids: Sequence[str]) -> int:
    """Delete the index rows of `session_ids`; how many were deleted. What they held leaves the
    summary and the trees they were part of are summed again without them. The link locks come
    first (as every writer of these trees takes them), then the rows, by id as every writer
    locks them, which are then deleted by id: what leaves the summary is exactly what was
    deleted (deleting by session id would also delete a row another writer inserted after the
    rows were read, uncounted)."""
    if not session_ids:
        return 0
    ids = list(session_ids)
    conn = db.connection()
    roots = roots_of(db, ids)
    lock_links(db, [*ids, *roots])
    lock_trees(db, [*ids, *roots])  # the roots are summed again below
    locked = rows_for_update(db, _select().where(_SI.c.session_id.in_(ids)))
    if not locked:
        return 0
    doomed = delete(_SI).where(_SI.c.id.in_([r["id"] for r in locked]))
    gone = [dict(r._mapping) for r in conn.execute(doomed.returning(*(_SI.c[c] for c in SHARE_COLUMNS)))]
    refresh_trees(db, [r["root_session_id"] for r in gone])
    apply(db, removed=shares(gone))  # `spend_day` after every index row, as every writer
    # their place in the search queue, then their searchable text: the order the catch-up
    # takes them in, so a prune and a catch-up of one session never wait on each other
    unqueue(db, ids)
    remove_parts(db, ids)
    return len(gone)
