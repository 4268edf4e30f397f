"""Span records as the OpenTelemetry SDK's ReadableSpan, and the OTLP/HTTP (protobuf) exporter.

The SDK's tracer draws ids at random and stamps the clock; octel's spans carry ids derived from
the tree and the recorded times, so they are built as finished `ReadableSpan`s and handed to the
exporter directly, bypassing tracer and span processor. The exporter reads the standard
`OTEL_EXPORTER_OTLP_ENDPOINT`, `…_TRACES_ENDPOINT`, `…_HEADERS` and `…_TIMEOUT` variables itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from archiver.document import ARCHIVER_VERSION
from telemetry.otel_export.conventions import SCHEMA_URL
from telemetry.otel_export.spans import SpanRecord

__all__ = ["endpoint", "make_exporter", "readable_spans", "resource_for"]

_KIND = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
_STATUS = {"UNSET": StatusCode.UNSET, "OK": StatusCode.OK, "ERROR": StatusCode.ERROR}
_SCOPE = InstrumentationScope("octel.otel_export", ARCHIVER_VERSION, SCHEMA_URL)


def resource_for(service_name: str) -> Resource:
    """The resource of every exported span: the service, and the Phoenix project of the same name."""
    return Resource.create(
        {"service.name": service_name, "openinference.project.name": service_name}, schema_url=SCHEMA_URL
    )


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def readable_spans(records: Iterable[SpanRecord], resource: Resource) -> list[ReadableSpan]:
    out = []
    for r in records:
        out.append(
            ReadableSpan(
                name=r.name,
                context=_context(r.trace_id, r.span_id),
                parent=_context(r.trace_id, r.parent_span_id) if r.parent_span_id is not None else None,
                resource=resource,
                attributes=dict(r.attributes),
                events=[Event(e.name, dict(e.attributes), e.time_ns) for e in r.events],
                kind=_KIND[r.kind],
                status=Status(_STATUS[r.status], r.status_message if r.status == "ERROR" else None),
                start_time=r.start_ns,
                end_time=r.end_ns,
                instrumentation_scope=_SCOPE,
            )
        )
    return out


def make_exporter(timeout: float | None = None) -> OTLPSpanExporter:
    """The OTLP/HTTP protobuf exporter, configured by the standard environment variables."""
    return OTLPSpanExporter(timeout=timeout) if timeout is not None else OTLPSpanExporter()


def endpoint() -> str:
    """Where the exporter sends spans, as it works it out from the standard variables."""
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return traces
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or "http://localhost:4318"
    return base.rstrip("/") + "/v1/traces"
