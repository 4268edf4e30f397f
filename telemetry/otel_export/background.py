"""Continuous export: trees queue up as they are archived and one thread sends them.

Archiving never waits on the tracing backend: `submit` only appends a root session id to a
bounded queue (a tree already waiting is not queued twice; a full queue drops the tree and
counts it in `octel_otel_trees_dropped_total`). The thread loads each tree from the store when
its turn comes, so memory holds the queued ids and one tree's spans, whatever the backlog.

One exporter per store and service in a process (`background_for`); at exit it gets a few
seconds to send what is queued.
"""

from __future__ import annotations

import atexit
import threading
from collections import deque

from sqlalchemy.engine import Engine

from telemetry.otel_export.export import TreeExporter
from telemetry.otel_export.otlp_http import OTLPSender
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.db import make_engine, session_scope

__all__ = ["EXIT_FLUSH_SECONDS", "BackgroundExporter", "background_for"]

EXIT_FLUSH_SECONDS = 5.0
_TREES_PER_ROUND = 32  # trees the thread takes off the queue at once (their spans fill requests)


class BackgroundExporter:
    def __init__(
        self,
        settings: Settings,
        engine: Engine | None = None,
        *,
        sender: OTLPSender | None = None,
        attempts: int = 4,
        backoff_seconds: float = 1.0,
    ) -> None:
        self.settings = settings
        self._own_engine = engine is None
        self.engine = engine or make_engine(settings.db_url)
        self.limit = settings.otel_queue_trees
        self._stop = threading.Event()
        self._trees = TreeExporter(
            settings,
            self.engine,
            sender=sender,
            attempts=attempts,
            backoff_seconds=backoff_seconds,
            stop=self._stop,
        )
        self._queue: deque[str] = deque()
        self._cv = threading.Condition()
        self._busy = False
        self._thread: threading.Thread | None = None
        self.exported = self.dropped = self.trees_dropped = self.errors = 0
        self._uncounted = 0  # trees dropped and not yet added to the store's counter

    def submit(self, root: str) -> bool:
        """Queue a tree for export; False when the queue is full (the tree is dropped and counted)."""
        with self._cv:
            if self._stop.is_set():
                return False
            if root in self._queue:
                return True
            if len(self._queue) >= self.limit:
                # counted here, written to the store by the thread: no store write on this path
                self.trees_dropped += 1
                self._uncounted += 1
                return False
            self._queue.append(root)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="octel-otel-export", daemon=True)
                self._thread.start()
            self._cv.notify()
        return True

    def _count_dropped_trees(self) -> None:
        with self._cv:
            n, self._uncounted = self._uncounted, 0
        if not n:
            return
        try:
            with session_scope(self.engine) as db:
                bump(db, "otel_trees_dropped_total", {"reason": "queue_full"}, n)
        except Exception:
            self.errors += 1

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._stop.is_set():
                    self._cv.wait()
                if not self._queue:
                    return
                # what is waiting goes together: several small trees share a request
                roots = [self._queue.popleft() for _ in range(min(len(self._queue), _TREES_PER_ROUND))]
                self._busy = True
            try:
                for got in self._trees.export_roots(roots):
                    self.exported += got.exported
                    self.dropped += got.dropped
            except Exception:  # a store or mapping fault loses this tree's export, never the thread
                self.errors += 1
            finally:
                self._count_dropped_trees()
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    @property
    def queued(self) -> int:
        return len(self._queue)

    def flush(self, timeout: float) -> bool:
        """Wait until everything queued has been sent (or given up on); False on timeout."""
        with self._cv:
            return self._cv.wait_for(lambda: not self._queue and not self._busy, timeout)

    def close(self, timeout: float = EXIT_FLUSH_SECONDS) -> None:
        """Send what is queued within ``timeout``, then stop; what is left is not sent."""
        self.flush(timeout)
        with self._cv:
            self._stop.set()
            self._queue.clear()
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        self._count_dropped_trees()
        self._trees.shutdown()
        if self._own_engine:
            self.engine.dispose()


_shared: dict[tuple[str, str, str, bool], BackgroundExporter] = {}
_shared_lock = threading.Lock()


def _close_all() -> None:
    with _shared_lock:
        items = list(_shared.values())
        _shared.clear()
    for bg in items:
        bg.close()


def background_for(settings: Settings) -> BackgroundExporter | None:
    """This process's background exporter for the settings' store, or None when export is off."""
    if not settings.otel_export:
        return None
    # the archives: the folder, or the database itself
    where = str(settings.archives) if settings.archive_store_kind == "files" else "database"
    key = (settings.db_url, where, settings.otel_service_name, settings.otel_content)
    with _shared_lock:
        bg = _shared.get(key)
        if bg is None:
            if not _shared:
                atexit.register(_close_all)
            bg = _shared[key] = BackgroundExporter(settings)
        return bg
