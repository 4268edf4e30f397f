"""The documents this process has just written, held for the search catch-up to take instead
of reading each back from the store.

`write_documents` parses the redacted bytes it put (for the session's index row) and keeps the
parsed document here under its name and the hash of those bytes; the catch-up, in the same
process (`octel serve`, `octel watch`, or an `octel archive` that indexes at once), takes it
when its index row names that document and hash, and reads the store only otherwise. That
was about a fifth of the catch-up's time: reading and parsing every document again. Bounded:
at most `MAX_BYTES` of documents (as written) are held, the oldest let go first, and each is
taken once. A process whose catch-up runs elsewhere only holds the last few.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from archiver.shape import RawJson

__all__ = ["MAX_BYTES", "keep", "take"]

MAX_BYTES = 32 * 2**20  # of documents as written: a tree of 40 x 100 messages is about 5 MB

_lock = threading.Lock()
_held: OrderedDict[str, tuple[str, RawJson, int]] = OrderedDict()  # name -> (hash, doc, size)
_size = 0


def keep(name: str, digest: str, doc: RawJson, size: int) -> None:
    """Hold `doc`, the document just written as `name` (`size` bytes hashing to `digest`)."""
    global _size
    if size > MAX_BYTES:
        return
    with _lock:
        if (old := _held.pop(name, None)) is not None:
            _size -= old[2]
        _held[name] = (digest, doc, size)
        _size += size
        while _size > MAX_BYTES:
            _size -= _held.popitem(last=False)[1][2]


def take(name: str, digest: str | None) -> RawJson | None:
    """The document written as `name` with hash `digest`, let go; None when not held (or held
    with another hash: then the store's copy is the one to read)."""
    global _size
    with _lock:
        got = _held.get(name)
        if got is None or got[0] != digest:
            return None
        del _held[name]
        _size -= got[2]
        return got[1]
