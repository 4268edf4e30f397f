"""Prepared Claude Code trees into the configured archive store.

The folder store takes the bulk path (`archiver.batch.write_batch`: fsyncs side by side, one
folder sync, read back); the database store takes each document through `put` (size limit,
schema and bounds checked) and stores it in the index's transaction at `flush`, read back at
`confirm`. Either way each tree's result gets its index records, built from the redacted bytes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from archiver.batch import Prepared, write_batch
from archiver.errors import ArchiveWriteError
from archiver.files import content_hash, parse_archive
from archiver.record import record_from_doc
from archiver.store import ArchiveStore, FolderStore

__all__ = ["Writer", "remove_replaced", "write_prepared"]


def write_prepared(batch: Sequence[Prepared], store: ArchiveStore, *, compress: bool = False) -> None:
    """Write (folder) or hold for the next ``flush`` (database) every prepared document."""
    for p in batch:
        p.result.store = store
    if isinstance(store, FolderStore):
        write_batch(batch, store.folder, compress=compress, max_bytes=store.max_bytes)
        return
    for p in batch:
        for name, data in p.files:
            try:
                doc = parse_archive(data, name)
                store.put(name, str(doc["session_id"]), data)
            except ArchiveWriteError as exc:
                p.result.write_errors.append(str(exc))
                continue
            except (OSError, ValueError, KeyError) as exc:
                p.result.write_errors.append(f"archive {store.where(name)} failed its check: {exc}")
                continue
            p.result.written.append(name)
            p.result.records.append(record_from_doc(doc, name, content_hash(data)))


def remove_replaced(store: ArchiveStore, names: Iterable[str]) -> list[str]:
    """Remove the documents index rows named before they were re-archived (after the commit)."""
    return store.remove(list(names))


class Writer:
    """Runs one write at a time in a thread beside the caller, so the worker processes keep
    preparing the next batch while this one is written, fsynced and indexed (the fsyncs wait on
    the disk, not on a CPU). ``start`` waits for the write before it; ``wait`` raises what a
    write raised. Between writes no thread runs, so a process pool started then can fork."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def start(self, write: Callable[..., None], *args: Any) -> None:
        self.wait()

        def run() -> None:
            try:
                write(*args)
            except BaseException as exc:  # handed to the caller at its next wait
                self._error = exc

        self._thread = threading.Thread(target=run, name="octel-archive-writer")
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def after(self, items: Iterator[Any]) -> Iterator[Any]:
        """``items``, once the write in flight (if any) is done: a pool that starts when they
        are first asked for starts with no other thread running."""
        self.wait()
        yield from items
