"""Per-key write locks, so writers on several octel instances never double-count one event.

Each write checks what is stored and then writes (a cycle's first finish bumps `cycles_total`; a
re-archive counts only usage above the stored high-water mark). On SQLite every writer already
holds the database (`BEGIN IMMEDIATE`). On PostgreSQL, READ COMMITTED lets two transactions read
the same "before" and both write, so a writer first takes a transaction-scoped advisory lock on
the key it is about to write: other keys never wait, and the lock ends with the transaction.

A transaction that writes for several callers at once (`telemetry.services.ingest.group_commit`) takes
every key it will need up front, sorted, in one statement (`lock_keys`): the same order as any
other writer's, so two such transactions queue instead of deadlocking, and the keys it holds
are not asked for again.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import text
from sqlmodel import Session

from telemetry.store import pg_direct

__all__ = ["held_keys", "lock_key", "lock_keys"]

_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")
# One statement whatever the number of keys (so it is prepared once): the function scan hands
# the rows over in the array's order, and each lock is taken as its row is aggregated.
_LOCK_ALL = "SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM unnest(%s::text[]) AS k"
_HELD = "octel_held_locks"


def held_keys(db: Session) -> set[str]:
    """The keys this transaction took with `lock_keys` (empty when it took none that way)."""
    held: set[str] | None = db.info.get(_HELD)
    return held if held is not None else set()


def lock_key(db: Session, kind: str, key: str) -> None:
    """Hold `kind:key` until the transaction ends (PostgreSQL); a no-op on SQLite."""
    full = f"{kind}:{key}"
    if full in held_keys(db):
        return
    if db.get_bind().dialect.name == "postgresql":
        db.connection().execute(_LOCK, {"key": full})


def lock_keys(db: Session, keys: Iterable[str]) -> None:
    """Hold every `kind:key` of `keys` until the transaction ends, in sorted order, in one
    statement (PostgreSQL; a no-op on SQLite). `lock_key` then skips them; the caller clears
    the record (`db.info`) when the transaction ends."""
    wanted = sorted(set(keys) - held_keys(db))
    if not wanted:
        return
    if db.get_bind().dialect.name == "postgresql":
        pg_direct.execute(db.connection(), _LOCK_ALL, [wanted])
    db.info.setdefault(_HELD, set()).update(wanted)
