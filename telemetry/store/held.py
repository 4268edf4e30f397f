"""Work a transaction holds back and writes once, when a block of it ends.

A batch of writes (a group commit, a bulk import) does many small things that each want a
statement of their own: counter bumps, session relinks, cycle row writes. Inside `hold`, each
notes its part in a pending value kept in the session's `info`, and the block's end writes them
together, still in the same transaction. Nested blocks write with the outermost; nothing is
written when the block raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from sqlmodel import Session

__all__ = ["hold"]

P = TypeVar("P")


@contextmanager
def hold(db: Session, key: str, make: Callable[[], P], write: Callable[[Session, P], Any]) -> Iterator[None]:
    """Keep `make()` under `key` in `db.info` for the block, then `write(db, it)` if it ended
    without raising. Inside an open block of the same key, this one adds nothing."""
    if db.info.get(key) is not None:
        yield
        return
    value = make()
    db.info[key] = value
    try:
        yield
    finally:
        db.info.pop(key, None)
    write(db, value)
