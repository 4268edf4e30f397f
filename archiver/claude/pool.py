"""Read, build, redact and write Claude Code trees in worker processes, in order, a few ahead.

The CPU part of an import (parse the transcripts, build and score the documents, serialise,
redact and validate them) is pure, so worker processes do it. With an archive folder given,
they also write the files (``archiver.batch.write_batch``: a locked temporary file in the
folder, fsync, rename, each file read back and compared with the checked bytes) a few sessions
at a time, their fsyncs side by side, so creating files (most of an import's kernel time) is
spread over the cores; only the index records come back, never the bytes. The caller syncs the
folder once per batch (``sync_written``) and then indexes what came back, in order: a session
reaches the index only after its files are written in full and their renames are durable.
There are two workers per CPU, so one prepares while the other waits on its fsyncs. Without a
folder (the database store), or in this process, the bytes come back and the caller writes or
stores them. At most a few chunks per worker wait, so memory stays bounded and a failed import
has written little ahead of its index.

Workers are forked when this process runs no other thread (they run archiver code only and
never touch what the parent holds open), else started with ``forkserver``. With one CPU, or
few sessions, everything runs in this process.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from archiver.archive import ArchiveResult, now_iso
from archiver.batch import Prepared, sync_threads, write_batch
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.layout import SessionFiles
from archiver.claude.loading import load_tree, resume_state
from archiver.errors import WalkError
from archiver.files import sync_folder
from archiver.redact import Redactor

__all__ = [
    "Preparing",
    "Target",
    "fewer_collections",
    "not_prepared",
    "prepare_chunk",
    "prepare_whole",
    "prepared_trees",
    "sync_written",
    "workers_for",
]

# fewer sessions than this are not worth starting processes for
_MIN_SESSIONS = 64
# sessions per task: their files' fsyncs run side by side, then one folder fsync
_CHUNK = 16
_AHEAD = 2  # chunks waiting per worker

_REDACTOR: list[Redactor] = []
# a worker's fsync threads, started with its first chunk and kept for the next ones (a
# chunk's files are a dozen or two: starting threads for each cost more than its writes)
_SYNCS: list[ThreadPoolExecutor] = []
# an import's objects live for one session (a worker) or one batch (the importing process):
# collections at the default pace walk the parsed trees and loaded modules and find little
# to free (a few per cent of an import's time)
_GC_THRESHOLD = (10_000, 50, 100)


@dataclass(frozen=True)
class Target:
    """The archive folder trees are written into where they are prepared, and its size limit."""

    folder: Path
    max_bytes: int


def _init(redactor: Redactor) -> None:
    _REDACTOR[:] = [redactor]
    gc.set_threshold(*_GC_THRESHOLD)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Inside the block, the garbage collector runs at an import's pace; as before after it."""
    was = gc.get_threshold()
    gc.set_threshold(*_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*was)


def _prepare(chunk: Sequence[SessionFiles], label: str | None, target: Target | None) -> list[Prepared]:
    if target is not None and not _SYNCS:
        _SYNCS.append(sync_threads())
    return prepare_chunk(chunk, _REDACTOR[0], label, target, _SYNCS[0] if _SYNCS else None)


def prepare_whole(files: SessionFiles, redactor: Redactor, label: str | None) -> Prepared:
    """One session's files read whole, prepared, with what a later read resumes from."""
    try:
        tree = load_tree(files)
        prepared = prepare_claude_tree(tree, redactor, label=label)
    except Exception as exc:  # a transcript no reader foresaw: this session only, reported
        return not_prepared(files, exc)
    prepared.resume = resume_state(tree)
    return prepared


def prepare_chunk(
    chunk: Sequence[SessionFiles],
    redactor: Redactor,
    label: str | None,
    target: Target | None,
    syncs: ThreadPoolExecutor | None = None,
) -> list[Prepared]:
    """A few sessions prepared; with a ``target``, written there too (each result then names
    its files and holds their index records, and no longer their bytes), their fsyncs in
    ``syncs`` when given."""
    out = [prepare_whole(files, redactor, label) for files in chunk]
    if target is not None:  # the caller syncs the folder before it counts any of them
        write_batch(out, target.folder, max_bytes=target.max_bytes, sync_dir=False, syncs=syncs)
        for p in out:  # on disk, read back and compared: only what the index needs goes back
            p.files, p.checked, p.result.store = [], {}, None
    return out


def not_prepared(files: SessionFiles, exc: BaseException) -> Prepared:
    """A session that could not be prepared: nothing to write, the reason as its one problem
    (an importer reports it and goes on with the next session)."""
    where = str(files.main or next(files.paths(), ""))
    why = f"could not be read: {type(exc).__name__}: {exc}"[:500]
    error = WalkError("unreadable", "session", files.session_id, why, where)
    return Prepared(ArchiveResult(files.session_id, now_iso(), walk_errors=[error.to_dict()]))


def workers_for(sessions: int, cpus: int | None = None) -> int:
    """Worker processes for ``sessions`` trees: two per CPU this process may use (one
    prepares while the other waits on the disk), none for a handful of sessions or a single
    CPU."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 * cpus if cpus > 1 and sessions >= _MIN_SESSIONS else 0


def sync_written(batch: Sequence[Prepared], folder: Path) -> None:
    """Make the renames of the files workers wrote for ``batch`` durable (one folder fsync);
    when it fails, their trees report it and are not indexed."""
    written = [p for p in batch if p.result.written and not p.files]
    if not written:
        return
    try:
        sync_folder(folder)
    except OSError as exc:
        for p in written:
            p.result.write_errors.append(f"cannot sync folder {folder}: {exc}")
            p.result.written, p.result.records = [], []


def _chunks(sessions: Iterable[SessionFiles]) -> Iterator[list[SessionFiles]]:
    chunk: list[SessionFiles] = []
    for files in sessions:
        chunk.append(files)
        if len(chunk) >= _CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def prepared_trees(
    sessions: Iterable[SessionFiles],
    redactor: Redactor,
    *,
    label: str | None = None,
    workers: int = 0,
    target: Target | None = None,
) -> Iterator[tuple[SessionFiles, Prepared]]:
    """Each session with its prepared tree, in the order given: written into ``target`` (not
    yet synced) when it was prepared in a worker, else still to be written."""
    if workers <= 0:  # the caller writes, in a thread beside this one
        for files in sessions:
            yield files, prepare_whole(files, redactor, label)
        return
    with Preparing(redactor, label, workers) as pool:
        yield from pool.results(sessions, target)


class Preparing:
    """Worker processes preparing sessions, started before all of them are known: a few
    sessions may be handed over at once (``start``, e.g. while the caller still opens its
    store), the rest as results are taken (``results``); results come in the order given."""

    def __init__(self, redactor: Redactor, label: str | None, workers: int) -> None:
        # fork starts a worker in milliseconds; with other threads running (a progress bar, a
        # server) a forked child could inherit a lock held mid-way, so then forkserver
        fork = threading.active_count() == 1
        ctx = multiprocessing.get_context("fork" if fork else "forkserver")
        self._redactor, self._label, self._workers = redactor, label, workers
        # a forked worker gets the redactor as it is; one started afresh unpickles it and builds
        # it again (its patterns and scanner database take a second to compile)
        init = functools.partial(_init, redactor)
        self._pool = ProcessPoolExecutor(workers, mp_context=ctx, initializer=init)
        self._waiting: deque[tuple[list[SessionFiles], Future[list[Prepared]]]] = deque()

    def __enter__(self) -> Preparing:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, sessions: Iterable[SessionFiles]) -> None:
        """Hand ``sessions`` to the workers now (all of them: keep it to a few); what they
        prepare is not written (no target)."""
        for chunk in _chunks(sessions):
            self._submit(chunk, None)

    def _submit(self, chunk: list[SessionFiles], target: Target | None) -> None:
        self._waiting.append((chunk, self._pool.submit(_prepare, chunk, self._label, target)))

    def results(
        self, sessions: Iterable[SessionFiles] = (), target: Target | None = None
    ) -> Iterator[tuple[SessionFiles, Prepared]]:
        """What ``start`` was given, then ``sessions``, a few chunks ahead, each prepared."""
        for chunk in _chunks(sessions):
            self._submit(chunk, target)
            while len(self._waiting) >= self._workers * _AHEAD:
                yield from self._result(*self._waiting.popleft())
        while self._waiting:
            yield from self._result(*self._waiting.popleft())

    def close(self) -> None:
        """Start nothing more; wait for the workers to end."""
        for _, fut in self._waiting:
            fut.cancel()
        self._waiting.clear()
        self._pool.shutdown(wait=True)

    def _result(
        self, chunk: list[SessionFiles], fut: Future[list[Prepared]]
    ) -> Iterator[tuple[SessionFiles, Prepared]]:
        try:
            got = fut.result()
        except Exception:  # a worker that died (out of memory, killed): this process does it
            got = prepare_chunk(chunk, self._redactor, self._label, None)
        yield from zip(chunk, got, strict=True)
