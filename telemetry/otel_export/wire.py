"""Span records as an OTLP `ExportTraceServiceRequest`, written as protobuf wire bytes (pure).

The OpenTelemetry SDK builds a span object and then a protobuf message per attribute (some 40 a
span here), which cost more than reading the archive the span comes from. The few message types
a trace export needs are small, so this module writes their wire format directly: varints,
fixed-width times and length-delimited fields, in field-number order as protobuf writes them.
Attributes repeat across a tree (the session id on every span, the operation names, zeros), so
each encoded key/value field is kept and reused. Tests decode the bytes with the official
opentelemetry-proto classes and compare them with what the SDK's own encoder produces.

    ExportTraceServiceRequest  resource_spans=1
    ResourceSpans              resource=1  scope_spans=2  schema_url=3
    Resource                   attributes=1
    ScopeSpans                 scope=1  spans=2  schema_url=3
    InstrumentationScope       name=1  version=2
    Span                       trace_id=1 span_id=2 parent_span_id=4 name=5 kind=6 start=7 end=8
                               attributes=9 events=11 status=15 flags=16
    Span.Event                 time=1  name=2  attributes=3
    Status                     message=2  code=3
    KeyValue                   key=1  value=2
    AnyValue                   string=1  bool=2  int=3  double=4  array=5
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence

from telemetry.otel_export.spans import AttrValue, SpanEvent, SpanRecord

__all__ = ["SpanEncoder", "SpanRow", "any_value", "encode_attributes", "varint"]

SpanRow = tuple[bytes, bytes | None, str, str, int, int, bytes, Sequence[SpanEvent], str, str | None]

_KIND = {"INTERNAL": 1, "CLIENT": 3}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
_SMALL = [bytes([i]) for i in range(128)]
_Q = struct.Struct("<Q").pack
_TIMES = struct.Struct("<BQBQ").pack  # a span's start (field 7) and end (field 8), fixed64 each
_D = struct.Struct("<d").pack
# flags: SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE (0x100), the parent being local; fixed32, field 16
_FLAGS = b"\x85\x01" + struct.pack("<I", 0x100)
_KIND_FIELD = {k: b"\x30" + bytes([v]) for k, v in _KIND.items()}
_UNSET_TAIL = b"\x7a\x00" + _FLAGS  # an empty Status message, then the flags
_CACHE_LIMIT = 1 << 16  # ids, names or attribute keys kept at most; cleared past it
_VALUES_PER_KEY = 256  # encoded values kept per attribute key
_U64 = 0xFFFFFFFFFFFFFFFF


def varint(n: int) -> bytes:
    """Base-128 varint of a non-negative integer below 2**64."""
    if n < 0x80:
        return _SMALL[n]
    if n < 0x4000:  # two and three bytes (most token counts) without the loop
        return bytes((n & 0x7F | 0x80, n >> 7))
    if n < 0x200000:
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    if n < 0x10000000:
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, (n >> 14) & 0x7F | 0x80, n >> 21))
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    return tag + varint(len(payload)) + payload


def any_value(value: AttrValue) -> bytes:
    """An AnyValue message: bool before int (a bool is an int in Python), a sequence as an array."""
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + varint(value & _U64)  # int64: negatives as two's complement
    if isinstance(value, float):
        return b"\x21" + _D(value)
    return _field(b"\x2a", b"".join(_field(b"\x0a", any_value(v)) for v in value))


def _key_value(key: str, value: AttrValue) -> bytes:
    return _field(b"\x0a", key.encode()) + _field(b"\x12", any_value(value))


def encode_attributes(tag: bytes, attributes: Mapping[str, AttrValue]) -> bytes:
    """Every attribute as a repeated KeyValue field with ``tag`` (no caching)."""
    return b"".join(_field(tag, _key_value(k, v)) for k, v in attributes.items())


class SpanEncoder:
    """Encodes span records of one resource and instrumentation scope into export requests.

    One encoder per thread: its cache of encoded attributes is not locked.
    """

    def __init__(
        self,
        resource: Mapping[str, AttrValue],
        *,
        resource_schema_url: str = "",
        scope_name: str = "",
        scope_version: str = "",
        scope_schema_url: str = "",
    ) -> None:
        scope = b""
        if scope_name:
            scope += _field(b"\x0a", scope_name.encode())
        if scope_version:
            scope += _field(b"\x12", scope_version.encode())
        self._resource = _field(b"\x0a", encode_attributes(b"\x0a", resource))
        self._resource_tail = _field(b"\x1a", resource_schema_url.encode()) if resource_schema_url else b""
        self._scope = _field(b"\x0a", scope)
        self._scope_tail = _field(b"\x1a", scope_schema_url.encode()) if scope_schema_url else b""
        # per tag, per key: the encoded key, the encoded KeyValue fields of the values seen, and
        # the fields' fixed parts for a double (all but its 8 bytes) and for false and true
        self._attrs: dict[bytes, dict[str, tuple[bytes, dict[object, bytes], bytes, bytes, bytes]]] = {}
        self._names: dict[str, bytes] = {}

    def _attributes(self, out: list[bytes], tag: bytes, attributes: Mapping[str, AttrValue]) -> None:
        """Append each attribute as a KeyValue field with ``tag`` to ``out``.

        Encoded fields of str and int values, and of one-string lists (finish reasons), are kept
        and reused (not bool: True == 1 in Python, not on the wire; not float: -0.0 == 0.0):
        attributes repeat across a tree (the session id on every span, operation names, zeros).
        A key stops keeping new values once it has _VALUES_PER_KEY of them: ids and titles seldom
        repeat, and keeping them costs more than encoding them again. A double or a bool is the
        key's fixed bytes and the value's."""
        cache = self._attrs.get(tag)
        if cache is None or len(cache) > _CACHE_LIMIT:
            cache = self._attrs[tag] = {}
        append = out.append
        for k, v in attributes.items():
            entry = cache.get(k)
            if entry is None:
                key = _field(b"\x0a", k.encode())
                double = tag + varint(len(key) + 11) + key + b"\x12\x09\x21"
                no, yes = (_field(tag, key + b"\x12\x02\x10" + b) for b in (b"\x00", b"\x01"))
                entry = cache[k] = (key, {}, double, no, yes)
            t = type(v)
            if t is float:
                append(entry[2] + _D(v))
                continue
            if t is bool:
                append(entry[4] if v else entry[3])
                continue
            kept = entry[1]
            if t is str or t is int:
                seen: object = v
            elif t is list and len(v) == 1 and type(v[0]) is str:  # type: ignore[arg-type, index]
                seen = (v[0],)  # type: ignore[index]  # a finish reason: a few repeat
            else:
                append(_field(tag, entry[0] + _field(b"\x12", any_value(v))))
                continue
            got = kept.get(seen)
            if got is None:
                if t is str:
                    value = _field(b"\x0a", v.encode())  # type: ignore[union-attr]
                else:
                    value = b"\x18" + varint(v & _U64) if t is int else any_value(v)  # type: ignore[operator]
                kv = entry[0] + b"\x12" + varint(len(value)) + value
                got = tag + varint(len(kv)) + kv
                if len(kept) < _VALUES_PER_KEY:
                    kept[seen] = got
            append(got)

    def _event(self, e: SpanEvent) -> bytes:
        body = [b"\x09" + _Q(e.time_ns)] if e.time_ns else []
        body.append(_field(b"\x12", e.name.encode()))
        self._attributes(body, b"\x1a", e.attributes)
        return _field(b"\x5a", b"".join(body))

    def span(self, r: SpanRecord) -> bytes:
        """One Span message, as the ``spans`` field of ScopeSpans."""
        attributes: list[bytes] = []
        self._attributes(attributes, b"\x4a", r.attributes)
        parent = r.parent_span_id.to_bytes(8, "big") if r.parent_span_id is not None else None
        row = (r.span_id.to_bytes(8, "big"), parent, r.name, r.kind, r.start_ns, r.end_ns)
        return self.spans(r.trace_id, [(*row, b"".join(attributes), r.events, r.status, r.status_message)])[0]

    def spans(self, trace_id: int, rows: Iterable[SpanRow]) -> list[bytes]:
        """Span messages of one trace from rows whose ids are their 8 bytes and whose attributes
        are already encoded (Span fields 9, in order): (span id, parent span id or None, name,
        kind, start, end, attributes, events, status, status message)."""
        head = b"\x0a\x10" + trace_id.to_bytes(16, "big") + b"\x12\x08"  # trace id, the span id's tag
        names, kinds = self._names, _KIND_FIELD
        out: list[bytes] = []
        if len(names) > _CACHE_LIMIT:
            names.clear()
        append, join = out.append, b"".join
        for span_id, parent, name, kind, start, end, attributes, events, status, message in rows:
            encoded = names.get(name)  # names repeat: `chat {model}`, `execute_tool bash`
            if encoded is None:
                encoded = names[name] = _field(b"\x2a", name.encode()) if name else b""
            if status == "UNSET":  # most spans: an empty status, then the flags
                tail = _UNSET_TAIL
            else:
                got = _field(b"\x12", message.encode()) if status == "ERROR" and message else b""
                tail = _field(b"\x7a", got + b"\x18" + _SMALL[_STATUS[status]]) + _FLAGS
            if start and end:  # both times (most spans): one pack, 18 bytes
                times = _TIMES(0x39, start, 0x41, end)
            else:
                times = (b"\x39" + _Q(start) if start else b"") + (b"\x41" + _Q(end) if end else b"")
            parent_field = b"\x22\x08" + parent if parent is not None else b""
            more = join([self._event(e) for e in events]) if events else b""
            # the Span's length from its parts' (the trace id and span id fields are 28 bytes, the
            # kind 2): the message is written in one join, its body not copied again
            n = 30 + len(parent_field) + len(encoded) + len(times) + len(attributes) + len(more) + len(tail)
            append(
                join(
                    (
                        b"\x12",
                        varint(n),
                        head,
                        span_id,
                        parent_field,
                        encoded,
                        kinds[kind],
                        times,
                        attributes,
                        more,
                        tail,
                    )
                )
            )
        return out

    def request(self, spans: Iterable[bytes]) -> bytes:
        """An ExportTraceServiceRequest holding already encoded spans (from `span`); no spans, an
        empty request."""
        spans = list(spans)
        size = sum(map(len, spans))
        if not size:
            return b""
        # the lengths first, then one join: the spans (hundreds of kB) are copied once
        scope_size = len(self._scope) + size + len(self._scope_tail)
        scope_head = b"\x12" + varint(scope_size)
        resource_size = len(self._resource) + len(scope_head) + scope_size + len(self._resource_tail)
        head = [b"\x0a", varint(resource_size), self._resource, scope_head, self._scope]
        return b"".join([*head, *spans, self._scope_tail, self._resource_tail])

    def encode(self, records: Sequence[SpanRecord]) -> bytes:
        """An ExportTraceServiceRequest of span records."""
        return self.request(self.span(r) for r in records)
