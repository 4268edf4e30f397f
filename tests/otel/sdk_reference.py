"""The OpenTelemetry SDK's way to a trace export request, as the reference for octel's encoder.

octel writes OTLP protobuf itself (telemetry/otel_export/wire.py); these helpers build the same
spans as the SDK's finished `ReadableSpan`s and encode them with the SDK exporter's own encoder,
so a test can check that both requests decode to the same message.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from telemetry.otel_export.spans import SpanRecord

__all__ = ["readable_spans", "sdk_request"]

_KIND = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT}
_STATUS = {"UNSET": StatusCode.UNSET, "OK": StatusCode.OK, "ERROR": StatusCode.ERROR}


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def readable_spans(
    records: Iterable[SpanRecord], resource: Resource, scope: InstrumentationScope
) -> list[ReadableSpan]:
    return [
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
            instrumentation_scope=scope,
        )
        for r in records
    ]


def sdk_request(
    records: Iterable[SpanRecord],
    resource: Mapping[str, Any],
    *,
    resource_schema_url: str,
    scope_name: str,
    scope_version: str,
    scope_schema_url: str,
) -> ExportTraceServiceRequest:
    """The request the SDK's OTLP exporter would send for these records."""
    res = Resource(dict(resource), schema_url=resource_schema_url)
    scope = InstrumentationScope(scope_name, scope_version, scope_schema_url)
    return encode_spans(readable_spans(records, res, scope))
