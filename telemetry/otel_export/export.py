"""Send archived trees to an OTLP endpoint: load, map, encode, send in batches with retries.

A request that fails with an answer another attempt may change (429, any 5xx, no connection, no
answer in time) is tried again after a doubling pause, or as long as the backend's Retry-After
asks; any other refusal drops its spans at once.

Counts go to the store's write-time counters (`octel_otel_spans_exported_total`,
`octel_otel_spans_dropped_total`), so `/metrics` of any octel instance on the store shows them,
whichever process exported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypedDict

from sqlalchemy.engine import Engine
from sqlmodel import Session

from telemetry.archive_store import archive_store
from telemetry.otel_export.mapping import encoded_tree_spans
from telemetry.otel_export.otlp_http import OTLPSender
from telemetry.otel_export.resource import encoder_for
from telemetry.otel_export.sources import LoadedTree, iter_trees
from telemetry.otel_export.spans import trace_id
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.db import session_scope

__all__ = ["BATCH_BYTES", "BATCH_SPANS", "TreeExport", "TreeExporter", "count_spans"]

# A request holds at most this many spans and bytes of them (a span larger than that goes
# alone): each request costs about a millisecond of CPU whatever its size (the HTTP exchange, a
# thread), and 2 MiB stays well under the 4 MiB limits backends set (gRPC's default message size)
BATCH_SPANS = 4096
BATCH_BYTES = 2 << 20


def _fits(spans: list[bytes], start: int, room: int, room_bytes: int) -> tuple[int, int]:
    """(end, bytes): how far from ``start`` spans fit in ``room`` spans and ``room_bytes``."""
    end = min(len(spans), start + max(room, 0))
    size = sum(map(len, spans[start:end]))
    if size <= room_bytes:  # the common case: the rest of the tree fits whole
        return end, size
    size, i = 0, start
    while i < end and size + len(spans[i]) <= room_bytes:
        size += len(spans[i])
        i += 1
    return i, size


class TreeExportDoc(TypedDict):
    """A ``TreeExport`` as ``octel export`` prints it."""

    root_session_id: str
    trace_id: str
    spans: int
    exported: int
    dropped: int
    problems: list[str]
    error: str | None


@dataclass
class TreeExport:
    root_session_id: str
    trace_id: str
    spans: int = 0
    exported: int = 0
    dropped: int = 0
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    encoded: list[bytes] = field(default_factory=list, repr=False)  # Span messages, until sent

    def to_dict(self) -> TreeExportDoc:
        return {
            "root_session_id": self.root_session_id,
            "trace_id": self.trace_id,
            "spans": self.spans,
            "exported": self.exported,
            "dropped": self.dropped,
            "problems": self.problems,
            "error": self.error,
        }


def count_spans(engine: Engine, exported: int, dropped: int) -> None:
    with session_scope(engine) as db:
        bump(db, "otel_spans_exported_total", {}, exported)
        bump(db, "otel_spans_dropped_total", {}, dropped)


Sent = tuple[int, str | None]  # spans the backend refused (-1: all), what it said when it refused


class _InFlight:
    """One request sent on a thread of its own while the caller prepares the next (the wait for
    the backend's answer then costs no wall time). A daemon thread: a backend that never answers
    holds no process at exit."""

    def __init__(self, send: Callable[[bytes], Sent], body: bytes) -> None:
        self._got: Sent | BaseException = -1, None
        self._thread = threading.Thread(target=self._run, args=(send, body), name="otlp-send", daemon=True)
        self._thread.start()

    def _run(self, send: Callable[[bytes], Sent], body: bytes) -> None:
        try:
            self._got = send(body)
        except BaseException as exc:  # raised again in the caller's thread, by outcome()
            self._got = exc

    def outcome(self) -> Sent:
        self._thread.join()
        if isinstance(self._got, BaseException):
            raise self._got
        return self._got


class TreeExporter:
    """Exports whole trees, one at a time; safe to call from one thread at a time."""

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        *,
        sender: OTLPSender | None = None,
        attempts: int = 4,
        backoff_seconds: float = 1.0,
        stop: threading.Event | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.store = archive_store(settings, engine)
        self.sender = sender or OTLPSender()
        self.attempts = max(1, attempts)
        self.backoff = backoff_seconds
        self.stop = stop or threading.Event()
        self.encoder = encoder_for(settings.otel_service_name)

    def _send(self, body: bytes) -> Sent:
        """One request, retried while the failure may pass."""
        said = None
        for attempt in range(self.attempts):
            got = self.sender.post(body)
            if got.ok:
                return got.rejected, got.message if got.rejected else None
            said = got.message
            if not got.retry or attempt + 1 == self.attempts:
                break
            pause = got.retry_after if got.retry_after is not None else self.backoff * 2**attempt
            if self.stop.wait(pause):
                break  # shutting down: give up now rather than hold the process
        return -1, said

    def export_root(self, root: str) -> TreeExport:
        return self.export_roots([root])[0]

    def export_roots(
        self, roots: Iterable[str], progress: Callable[[], None] | None = None
    ) -> list[TreeExport]:
        """Export trees in order; spans of several small trees share a request (fewer round trips),
        and a request is on its way while the next one is read, mapped and encoded."""
        results: list[TreeExport] = []
        batch: list[bytes] = []  # encoded spans
        size = [0]  # their bytes
        owners: list[tuple[TreeExport, int]] = []  # whose spans the batch holds, how many
        counts = [0, 0]  # exported, dropped: written to the store once, at the end
        why: dict[str, str] = {}  # root -> what the endpoint said when it did not take spans
        in_flight: list[tuple[_InFlight, int, list[tuple[TreeExport, int]]]] = []  # one at most

        def book(sent: int, whose: list[tuple[TreeExport, int]], outcome: Sent) -> None:
            refused, said = outcome
            taken = sent - refused if refused >= 0 else 0
            left = taken  # a partial refusal names no spans: count it against the last trees
            for tree, n in whose:
                tree.exported += min(n, left)
                tree.dropped += n - min(n, left)
                if n > left and said:
                    why[tree.root_session_id] = said
                left -= min(n, left)
            counts[0] += taken
            counts[1] += sent - taken

        def settle() -> None:
            while in_flight:
                request, sent, whose = in_flight.pop()
                book(sent, whose, request.outcome())

        def flush(last: bool) -> None:
            if not batch:
                return
            body, sent, whose = self.encoder.request(batch), len(batch), owners.copy()
            batch.clear()
            owners.clear()
            size[0] = 0
            settle()  # one request at a time: the backend gets them in order
            if last:
                book(sent, whose, self._send(body))
            else:
                in_flight.append((_InFlight(self._send, body), sent, whose))

        try:
            with Session(self.engine) as db:  # one read session for all: no connection per tree
                for tree in iter_trees(db, self.store, list(roots)):
                    out = self._map(tree)
                    results.append(out)
                    spans, out.encoded = out.encoded, []  # in the batch from here: each span once
                    i = 0
                    while i < len(spans):
                        end, n = _fits(spans, i, BATCH_SPANS - len(batch), BATCH_BYTES - size[0])
                        if end < len(spans) and batch:
                            flush(last=False)  # the rest of the tree starts a request of its own
                            continue
                        if end == i:  # one span over a request's budget: it goes alone
                            end, n = i + 1, len(spans[i])
                        batch += spans[i:end]
                        size[0] += n
                        owners.append((out, end - i))
                        i = end
                    if progress is not None:
                        progress()
            flush(last=True)
        finally:
            settle()  # a request on its way counts, even when a later tree failed
            if counts[0] or counts[1]:
                count_spans(self.engine, counts[0], counts[1])
        for out in results:
            if out.dropped:
                said = f": {why[out.root_session_id]}" if out.root_session_id in why else ""
                out.error = f"the OTLP endpoint did not take {out.dropped} of {out.spans} spans{said}"
        return results

    def _map(self, tree: LoadedTree) -> TreeExport:
        out = TreeExport(tree.root_session_id, f"{trace_id(tree.root_session_id):032x}")
        out.problems = tree.problems
        if not tree.docs:
            out.error = "no readable archive of this tree"
            return out
        content = self.settings.otel_content
        out.encoded = encoded_tree_spans(tree.docs, self.encoder, cycle=tree.cycle, content=content)
        out.spans = len(out.encoded)
        return out

    def shutdown(self) -> None:
        self.sender.close()
