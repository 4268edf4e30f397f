"""Read, build and redact Claude Code trees in worker processes, in order, a few ahead.

The CPU part of an import (parse the transcripts, build and score the documents, serialise
and redact them) is pure, so worker processes do it while the importing process writes,
syncs and indexes the batch before; results come back in the order the sessions were given,
with at most a few per worker waiting, so memory stays bounded. Workers are forked when this
process runs no other thread (they run archiver code only and never touch what the parent
holds open), else started with ``forkserver``. With one CPU, or few sessions, everything runs
in this process.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor

from archiver.archive import ArchiveResult, now_iso
from archiver.batch import Prepared
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.layout import SessionFiles, load_tree, resume_state
from archiver.errors import WalkError
from archiver.redact import Redactor

__all__ = ["not_prepared", "prepare_whole", "prepared_trees", "workers_for"]

# fewer sessions than this are not worth starting processes for
_MIN_SESSIONS = 64
_AHEAD = 8  # results waiting per worker

_REDACTOR: list[Redactor] = []


def _init(redactor: Redactor) -> None:
    _REDACTOR[:] = [redactor]


def _prepare(files: SessionFiles, label: str | None) -> Prepared:
    return prepare_whole(files, _REDACTOR[0], label)


def prepare_whole(files: SessionFiles, redactor: Redactor, label: str | None) -> Prepared:
    """One session's files read whole, prepared, with what a later read resumes from."""
    try:
        tree = load_tree(files)
        prepared = prepare_claude_tree(tree, redactor, label=label)
    except Exception as exc:  # a transcript no reader foresaw: this session only, reported
        return not_prepared(files, exc)
    prepared.resume = resume_state(tree)
    return prepared


def not_prepared(files: SessionFiles, exc: BaseException) -> Prepared:
    """A session that could not be prepared: nothing to write, the reason as its one problem
    (an importer reports it and goes on with the next session)."""
    where = str(files.main or next(files.paths(), ""))
    why = f"could not be read: {type(exc).__name__}: {exc}"[:500]
    error = WalkError("unreadable", "session", files.session_id, why, where)
    return Prepared(ArchiveResult(files.session_id, now_iso(), walk_errors=[error.to_dict()]))


def workers_for(sessions: int, cpus: int | None = None) -> int:
    """Worker processes for ``sessions`` trees: one per CPU this process may use, none for
    a handful of sessions or a single CPU."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cpus if cpus > 1 and sessions >= _MIN_SESSIONS else 0


def prepared_trees(
    sessions: Iterable[SessionFiles], redactor: Redactor, *, label: str | None = None, workers: int = 0
) -> Iterator[tuple[SessionFiles, Prepared]]:
    """Each session with its prepared tree, in the order given."""
    if workers <= 0:
        for files in sessions:
            yield files, prepare_whole(files, redactor, label)
        return
    # fork starts a worker in milliseconds; with other threads running (a progress bar, a
    # server) a forked child could inherit a lock held mid-way, so then forkserver
    fork = threading.active_count() == 1
    ctx = multiprocessing.get_context("fork" if fork else "forkserver")
    # a forked worker inherits the redactor as it is; one started afresh builds it again (its
    # patterns and scanner database take a second to compile)
    _init(redactor)
    init = None if fork else functools.partial(_init, redactor)
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=init) as pool:
        waiting: deque[tuple[SessionFiles, Future[Prepared]]] = deque()
        for files in sessions:
            waiting.append((files, pool.submit(_prepare, files, label)))
            if len(waiting) >= workers * _AHEAD:
                yield _result(*waiting.popleft(), redactor, label)
        while waiting:
            yield _result(*waiting.popleft(), redactor, label)


def _result(
    files: SessionFiles, fut: Future[Prepared], redactor: Redactor, label: str | None
) -> tuple[SessionFiles, Prepared]:
    try:
        return files, fut.result()
    except Exception:  # a worker that died (out of memory, killed): this process does it
        return files, prepare_whole(files, redactor, label)
