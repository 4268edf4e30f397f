"""Send archived trees to an OTLP endpoint: load, map, convert, send in batches with retries.

Counts go to the store's write-time counters (`octel_otel_spans_exported_total`,
`octel_otel_spans_dropped_total`), so `/metrics` of any octel instance on the store shows them,
whichever process exported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from sqlalchemy.engine import Engine
from sqlmodel import Session

from telemetry.archive_store import archive_store
from telemetry.otel_export.mapping import tree_spans
from telemetry.otel_export.sdk import make_exporter, readable_spans, resource_for
from telemetry.otel_export.sources import load_tree
from telemetry.otel_export.spans import SpanRecord, trace_id
from telemetry.settings import Settings
from telemetry.store.aggregates import bump
from telemetry.store.db import session_scope

__all__ = ["BATCH_SPANS", "TreeExport", "TreeExporter", "count_spans"]

BATCH_SPANS = 512  # spans per OTLP request: well under the 4 MiB request limits backends set


@dataclass
class TreeExport:
    root_session_id: str
    trace_id: str
    spans: int = 0
    exported: int = 0
    dropped: int = 0
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    records: list[SpanRecord] = field(default_factory=list, repr=False)  # until sent

    def to_dict(self) -> dict[str, Any]:
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


class TreeExporter:
    """Exports whole trees, one at a time; safe to call from one thread at a time."""

    def __init__(
        self,
        settings: Settings,
        engine: Engine,
        *,
        exporter: SpanExporter | None = None,
        attempts: int = 3,
        backoff_seconds: float = 1.0,
        stop: threading.Event | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine
        self.exporter = exporter or make_exporter()
        self.attempts = max(1, attempts)
        self.backoff = backoff_seconds
        self.stop = stop or threading.Event()
        self.resource = resource_for(settings.otel_service_name)

    def _send(self, batch: list[Any]) -> bool:
        """One batch, retried with a doubling pause (the SDK exporter also retries within a call)."""
        for attempt in range(self.attempts):
            try:
                if self.exporter.export(batch) is SpanExportResult.SUCCESS:
                    return True
            except Exception:  # an exporter that raises counts as a failed attempt
                pass
            if attempt + 1 < self.attempts and self.stop.wait(self.backoff * 2**attempt):
                break  # shutting down: give up now rather than hold the process
        return False

    def export_root(self, root: str) -> TreeExport:
        return self.export_roots([root])[0]

    def export_roots(
        self, roots: Iterable[str], progress: Callable[[], None] | None = None
    ) -> list[TreeExport]:
        """Export trees in order; spans of several small trees share a request (fewer round trips)."""
        results: list[TreeExport] = []
        batch: list[ReadableSpan] = []
        owners: list[tuple[TreeExport, int]] = []  # whose spans the batch holds, how many

        def flush() -> None:
            if not batch:
                return
            ok = self._send(batch)
            for tree, n in owners:
                if ok:
                    tree.exported += n
                else:
                    tree.dropped += n
            count_spans(self.engine, len(batch) if ok else 0, 0 if ok else len(batch))
            batch.clear()
            owners.clear()

        for root in roots:
            out = self._load(root)
            results.append(out)
            for i in range(0, len(out.records), BATCH_SPANS):
                chunk = out.records[i : i + BATCH_SPANS]
                if len(batch) + len(chunk) > BATCH_SPANS:
                    flush()
                batch.extend(readable_spans(chunk, self.resource))
                owners.append((out, len(chunk)))
            out.records = []  # the spans are in the batch now: hold each tree's records once
            if progress is not None:
                progress()
        flush()
        for out in results:
            if out.dropped:
                out.error = f"the OTLP endpoint did not take {out.dropped} of {out.spans} spans"
        return results

    def _load(self, root: str) -> TreeExport:
        out = TreeExport(root, f"{trace_id(root):032x}")
        with Session(self.engine) as db:
            tree = load_tree(db, archive_store(self.settings, self.engine), root)
        out.problems = tree.problems
        if not tree.docs:
            out.error = "no readable archive of this tree"
            return out
        out.records = tree_spans(tree.docs, cycle=tree.cycle, content=self.settings.otel_content)
        out.spans = len(out.records)
        return out

    def shutdown(self) -> None:
        self.exporter.shutdown()
