"""Per-key write locks, so writers on several octel instances never double-count one event.

Each write checks what is stored and then writes (a cycle's first finish bumps `cycles_total`; a
re-archive counts only usage above the stored high-water mark). On SQLite every writer already
holds the database (`BEGIN IMMEDIATE`). On PostgreSQL, READ COMMITTED lets two transactions read
the same "before" and both write, so a writer first takes a transaction-scoped advisory lock on
the key it is about to write: other keys never wait, and the lock ends with the transaction.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlmodel import Session

__all__ = ["lock_key"]

_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


def lock_key(db: Session, kind: str, key: str) -> None:
    """Hold `kind:key` until the transaction ends (PostgreSQL); a no-op on SQLite."""
    if db.get_bind().dialect.name == "postgresql":
        db.connection().execute(_LOCK, {"key": f"{kind}:{key}"})
