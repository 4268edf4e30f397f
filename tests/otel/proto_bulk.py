"""Span records as opentelemetry-proto messages built directly (no SDK spans): the benchmark's
second way to encode, measured against octel's own wire encoder."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from telemetry.otel_export.spans import SpanRecord

_KIND = {"INTERNAL": Span.SPAN_KIND_INTERNAL, "CLIENT": Span.SPAN_KIND_CLIENT}
_STATUS = {"UNSET": Status.STATUS_CODE_UNSET, "OK": Status.STATUS_CODE_OK, "ERROR": Status.STATUS_CODE_ERROR}


def _any(v: Any) -> AnyValue:
    if isinstance(v, str):
        return AnyValue(string_value=v)
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(array_value=ArrayValue(values=[_any(x) for x in v]))


def _kvs(attrs: Mapping[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_any(v)) for k, v in attrs.items()]


def bulk_request(
    records: Iterable[SpanRecord],
    resource: Mapping[str, Any],
    *,
    resource_schema_url: str,
    scope_name: str,
    scope_version: str,
    scope_schema_url: str,
) -> ExportTraceServiceRequest:
    req = ExportTraceServiceRequest()
    rs = req.resource_spans.add(schema_url=resource_schema_url)
    rs.resource.attributes.extend(_kvs(resource))
    ss = rs.scope_spans.add(schema_url=scope_schema_url)
    ss.scope.name, ss.scope.version = scope_name, scope_version
    for r in records:
        s = ss.spans.add(
            trace_id=r.trace_id.to_bytes(16, "big"),
            span_id=r.span_id.to_bytes(8, "big"),
            name=r.name,
            kind=_KIND[r.kind],
            start_time_unix_nano=r.start_ns,
            end_time_unix_nano=r.end_ns,
            flags=0x100,
        )
        if r.parent_span_id is not None:
            s.parent_span_id = r.parent_span_id.to_bytes(8, "big")
        s.attributes.extend(_kvs(r.attributes))
        for e in r.events:
            s.events.add(time_unix_nano=e.time_ns, name=e.name).attributes.extend(_kvs(e.attributes))
        s.status.code = _STATUS[r.status]
        if r.status == "ERROR" and r.status_message:
            s.status.message = r.status_message
    return req
