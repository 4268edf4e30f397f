"""Send archived trees to an OTLP endpoint: load, map, convert, send in batches with retries.

Counts go to the store's write-time counters (`octel_otel_spans_exported_total`,
`octel_otel_spans_dropped_total`), so `/metrics` of any octel instance on the store shows them,
whichever process exported.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
from sqlalchemy.engine import Engine
from sqlmodel import Session

from telemetry.otel_export.mapping import tree_spans
from telemetry.otel_export.sdk import make_exporter, readable_spans, resource_for
from telemetry.otel_export.sources import load_tree
from telemetry.otel_export.spans import trace_id
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

    def export_root(self, root: str, progress: Callable[[int], None] | None = None) -> TreeExport:
        out = TreeExport(root, f"{trace_id(root):032x}")
        with Session(self.engine) as db:
            tree = load_tree(db, self.settings.archives, root)
        out.problems = tree.problems
        if not tree.docs:
            out.error = "no readable archive of this tree"
            return out
        records = tree_spans(tree.docs, cycle=tree.cycle, content=self.settings.otel_content)
        out.spans = len(records)
        for i in range(0, len(records), BATCH_SPANS):
            chunk = records[i : i + BATCH_SPANS]
            if self._send(readable_spans(chunk, self.resource)):
                out.exported += len(chunk)
            else:
                out.dropped += len(chunk)
            if progress is not None:
                progress(len(chunk))
        if out.dropped:
            out.error = f"the OTLP endpoint did not take {out.dropped} of {out.spans} spans"
        count_spans(self.engine, out.exported, out.dropped)
        return out

    def shutdown(self) -> None:
        self.exporter.shutdown()
