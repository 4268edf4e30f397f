"""Group commit: concurrent ingest writes share one transaction and one commit.

Under many writers a write's cost is mostly per transaction, not per row: a connection checked
out and pinged, a BEGIN, the advisory locks, the counters' upsert, the sessions the cycles name
relinked, a durable COMMIT (an fsync on PostgreSQL), and a thread of the pool per request.
`GroupCommit` runs the writes it is given on a thread of its own (or a few): it takes whatever
has queued while it was writing as its next batch, so a lone write waits for nothing, and 32
writers at once pay those costs once a batch. One thread by default: since a batch's cycle
writes go to the database together (`cycle_rows.deferred`), a batch waits on a few round trips,
not one a write, and a second thread made batches half as large for a sixth more CPU a write.

- **Nothing is answered before the commit.** A member's future gets its result only after the
  batch's transaction has committed; when the commit fails, no member was answered yet.
- **One bad write does not fail the others.** A member may raise one of the `expected` errors
  (a conflict with what is stored) only before it writes anything, so the batch goes on without
  it and the caller gets the error. Any other error breaks the shared transaction: the batch is
  rolled back and each member runs again alone, in its own transaction (first writes of one key
  racing on another instance retried there, as a single write is), so only the bad one fails.
  Members are idempotent writes, so running one again after an unknown commit outcome is a retry.
- **Batches queue rather than deadlock.** Each member names the advisory lock keys it will
  take; the batch takes all of them first, sorted, in one statement
  (`telemetry.store.locks.lock_keys`), and writes every counter bump of the batch in one
  sorted statement at its end (`aggregates.coalesced`), the order every other writer uses. The
  sessions the batch's cycles name are relinked to their drivers once, at its end too
  (`spend_links.links_deferred`). What the members will read under their locks (`reads`) is
  read for the whole batch in one statement once the locks are held (`prefetch`), and what
  they write may be held back and written together at the end (`deferred`). A lock no
  member could name in advance (the session a finish moves its cycle away from) is taken when
  met; should the database find a deadlock there, it is an error like any other: the batch is
  rolled back and each write runs alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from telemetry.services.spend.spend_links import links_deferred
from telemetry.store import aggregates
from telemetry.store.db import session_scope
from telemetry.store.locks import lock_keys

__all__ = ["GroupCommit"]

log = logging.getLogger("octel")
T = TypeVar("T")
_ALONE_ATTEMPTS = 3  # two first writes of one id on two instances collide; the loser retries


@dataclass(slots=True)
class _Member:
    fn: Callable[[Session], Any]
    keys: tuple[str, ...]
    reads: tuple[str, ...] = ()
    future: Future[Any] | None = None  # `submit`'s
    waiter: asyncio.Future[Any] | None = None  # `run`'s, set on its event loop
    settled: bool = False


def _wake(outcomes: list[tuple[asyncio.Future[Any], bool, Any]]) -> None:
    """On the event loop: answer the batch's awaiting writes (one wakeup for them all)."""
    for waiter, ok, value in outcomes:
        if not waiter.done():  # a request that went away meanwhile was cancelled
            waiter.set_result(value) if ok else waiter.set_exception(value)


class GroupCommit:
    """Runs writes in shared transactions on a thread (or a few) of its own; `start` before use,
    `close` after."""

    def __init__(
        self,
        engine: Engine,
        *,
        expected: tuple[type[Exception], ...] = (),
        max_batch: int = 64,
        threads: int = 1,
        prefetch: Callable[[Session, list[str]], None] | None = None,
        deferred: Callable[[Session], contextlib.AbstractContextManager[None]] | None = None,
    ) -> None:
        self.engine = engine
        self.expected = expected
        self.prefetch = prefetch
        self.deferred = deferred
        self.max_batch = max_batch
        self.batches = 0  # transactions that committed a batch (for tests and benchmarks)
        self.members = 0
        self._count = threading.Lock()
        self._queue: queue.SimpleQueue[_Member | None] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._loop, name=f"octel-group-commit-{i}", daemon=True)
            for i in range(threads)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def close(self) -> None:
        """Write what is queued, then stop the threads."""
        running = [t for t in self._threads if t.is_alive()]
        for _ in running:
            self._queue.put(None)
        for t in running:
            t.join()

    def submit(
        self, fn: Callable[[Session], T], keys: Iterable[str] = (), reads: Iterable[str] = ()
    ) -> Future[T]:
        """Queue `fn(db)`; its future holds the result once the transaction committed. `reads`
        name what it will read under those locks: a batch hands them all to `prefetch` at once."""
        future: Future[T] = Future()
        self._enqueue(_Member(fn, tuple(keys), tuple(reads), future=future))
        return future

    async def run(self, fn: Callable[[Session], T], keys: Iterable[str] = (), reads: Iterable[str] = ()) -> T:
        """`submit`, awaited from the event loop without a thread of the pool. A batch's
        writes awaited on one loop are answered there with one wakeup, once it committed."""
        waiter: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._enqueue(_Member(fn, tuple(keys), tuple(reads), waiter=waiter))
        return await waiter

    def _enqueue(self, member: _Member) -> None:
        if not any(t.is_alive() for t in self._threads):
            raise RuntimeError("the group commit is not running")
        self._queue.put(member)

    def _settle(self, outcomes: Iterable[tuple[_Member, bool, Any]]) -> None:
        """Give each member its result (ok) or error; those awaited on an event loop in one
        call there per loop."""
        woken: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future[Any], bool, Any]]] = {}
        for m, ok, value in outcomes:
            if m.settled:
                continue
            m.settled = True
            if m.waiter is not None:
                woken.setdefault(m.waiter.get_loop(), []).append((m.waiter, ok, value))
            elif m.future is not None and not m.future.done():
                m.future.set_result(value) if ok else m.future.set_exception(value)
        for loop, items in woken.items():
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(_wake, items)

    def _loop(self) -> None:
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:  # one stop per thread: this one's, after this batch
                    stopping = True
                    break
                batch.append(more)
            try:
                self._run(batch)
            except BaseException as e:  # never leave a caller waiting on a future nobody sets
                log.exception("octel: group commit failed")
                self._settle((m, False, e) for m in batch)

    def _run(self, batch: list[_Member]) -> None:
        try:
            outcomes = self._together(batch)
        except Exception as e:
            if len(batch) > 1:
                log.info("octel: a batch of %d writes failed (%s); writing each alone", len(batch), e)
            for m in batch:
                self._alone(m)
            return
        with self._count:
            self.batches += 1
            self.members += len(batch)
        self._settle((m, ok, value) for m, (ok, value) in zip(batch, outcomes, strict=True))

    def _together(self, batch: list[_Member]) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = []
        with session_scope(self.engine) as db:
            lock_keys(db, [k for m in batch for k in m.keys])
            reads = [r for m in batch for r in m.reads]
            if self.prefetch is not None and len(reads) > 1:  # one read alone is read as it comes
                self.prefetch(db, reads)
            held = self.deferred(db) if self.deferred is not None else contextlib.nullcontext()
            # the members' held-back writes go out first, then the links that read them
            with aggregates.coalesced(db), links_deferred(db), held:
                for m in batch:
                    try:
                        outcomes.append((True, m.fn(db)))
                    except self.expected as e:  # raised before the member wrote anything
                        outcomes.append((False, e))
        return outcomes  # only now: the transaction has committed

    def _alone(self, m: _Member) -> None:
        for attempt in range(_ALONE_ATTEMPTS):
            try:
                with session_scope(self.engine) as db:
                    value = m.fn(db)
            except IntegrityError as e:
                if attempt < _ALONE_ATTEMPTS - 1:
                    continue
                self._settle([(m, False, e)])
            except Exception as e:
                self._settle([(m, False, e)])
            else:
                self._settle([(m, True, value)])
            return
