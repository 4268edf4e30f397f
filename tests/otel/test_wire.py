"""octel's own OTLP protobuf encoder decodes, with the official opentelemetry-proto classes, to
exactly the request the OpenTelemetry SDK's exporter builds from the same spans."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otel_trees import trees
from sdk_reference import sdk_request

from archiver.metrics import TOKEN_KINDS
from telemetry.otel_export.attributes import chat_attributes, message_fields, session_heads
from telemetry.otel_export.conventions import SCHEMA_URL
from telemetry.otel_export.fields import Key, KeyGroup, decode
from telemetry.otel_export.mapping import CycleFacts, encoded_tree_spans, tree_spans
from telemetry.otel_export.resource import SCOPE_NAME, SCOPE_VERSION, encoder_for, resource_attributes
from telemetry.otel_export.spans import SpanEvent, SpanRecord
from telemetry.otel_export.wire import SpanEncoder, encode_attributes, varint

META = {
    "resource_schema_url": SCHEMA_URL,
    "scope_name": SCOPE_NAME,
    "scope_version": SCOPE_VERSION,
    "scope_schema_url": SCHEMA_URL,
}


def decoded(body: bytes) -> ExportTraceServiceRequest:
    got = ExportTraceServiceRequest()
    got.ParseFromString(body)
    return got


def same_as_sdk(records: list[SpanRecord], encoder: SpanEncoder, resource: dict[str, Any]) -> None:
    want = sdk_request(records, resource, **META)
    got = decoded(encoder.encode(records))
    assert got == want
    # and spans encoded one by one (as the exporter batches them) make the same request
    assert decoded(encoder.request([encoder.span(r) for r in records])) == want


@settings(max_examples=80, deadline=None)
@given(trees(), st.booleans(), st.booleans())
def test_a_mapped_tree_encodes_as_the_sdk_would(tree: Any, content: bool, with_cycle: bool) -> None:
    docs, _ = tree
    cycle = None
    if with_cycle:
        counts = {"candidates": 3, "claims": 1, "swept": 0, "processed": 1, "escalated": None}
        cycle = CycleFacts("cyc-1", "impl", 1_700_000_000_000.0, None, counts, None, None, "timeout")
    records = tree_spans(docs, cycle=cycle, content=content)
    resource = resource_attributes("octel", {})
    # one encoder over many trees: what it keeps from earlier spans must not leak into later ones
    same_as_sdk(records, _SHARED, resource)
    same_as_sdk(records, encoder_for("octel", {}), resource)
    # what the export sends (spans written straight from the documents) is those records' request
    sent = _SHARED.request(encoded_tree_spans(docs, _SHARED, cycle=cycle, content=content))
    assert sent == _SHARED.encode(records)


_SHARED = encoder_for("octel", {})

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)  # no lone surrogates: not UTF-8
_values = st.one_of(
    _text,
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.lists(_text, max_size=4),
)
_attrs = st.dictionaries(st.text(min_size=1, max_size=30), _values, max_size=12)
_ids = st.integers(1, 2**64 - 1)
_times = st.integers(0, 2**63)


@st.composite
def records(draw: st.DrawFn) -> list[SpanRecord]:
    trace = draw(st.integers(1, 2**128 - 1))
    out = []
    for _ in range(draw(st.integers(0, 6))):
        status = draw(st.sampled_from(["UNSET", "OK", "ERROR"]))
        events = draw(
            st.lists(st.builds(SpanEvent, st.text(max_size=20), _times, _attrs), max_size=3).map(tuple)
        )
        out.append(
            SpanRecord(
                trace_id=trace,
                span_id=draw(_ids),
                parent_span_id=draw(st.none() | _ids),
                name=draw(st.text(max_size=40)),
                kind=draw(st.sampled_from(["INTERNAL", "CLIENT"])),
                start_ns=draw(_times),
                end_ns=draw(_times),
                attributes=draw(_attrs),
                events=events,
                status=status,
                status_message=draw(st.none() | _text),
            )
        )
    return out


@settings(max_examples=120, deadline=None)
@given(records(), _attrs)
def test_any_span_records_encode_as_the_sdk_would(spans: list[SpanRecord], resource: dict[str, Any]) -> None:
    same_as_sdk(spans, SpanEncoder(resource, **META), resource)


def test_equal_values_of_different_types_stay_apart() -> None:
    """True, 1 and 1.0 are equal (and hash alike) in Python; on the wire they are three types."""
    enc = encoder_for("octel", {})
    span = SpanRecord(1, 2, None, "s", "INTERNAL", 1, 2, {"a": True})
    got = []
    for v in (True, 1, 1.0, "1"):
        req = decoded(enc.encode([SpanRecord(1, 2, None, "s", "INTERNAL", 1, 2, {"a": v})]))
        got.append(req.resource_spans[0].scope_spans[0].spans[0].attributes[0].value.WhichOneof("value"))
    assert got == ["bool_value", "int_value", "double_value", "string_value"]
    assert decoded(enc.encode([span])) == sdk_request([span], resource_attributes("octel", {}), **META)


@given(st.integers(0, 2**64 - 1))
def test_varint_round_trips(n: int) -> None:
    data = varint(n)
    value = shift = 0
    for i, byte in enumerate(data):
        value |= (byte & 0x7F) << shift
        shift += 7
        assert (byte & 0x80 == 0) == (i == len(data) - 1)
    assert value == n


@settings(max_examples=150, deadline=None)
@given(_attrs)
def test_attributes_written_field_by_field_are_the_encoded_dictionary(attrs: dict[str, Any]) -> None:
    """`Key` writes each value as the dictionary encoder does (a str kept or not, every type),
    and `decode` reads the fields back to the same dictionary."""
    keys = {k: Key(k) for k in attrs}
    want = encode_attributes(b"\x4a", attrs)
    assert b"".join(keys[k].v(v) for k, v in attrs.items()) == want
    kept = [keys[k].kept(v) if type(v) is str else keys[k].v(v) for k, v in attrs.items()]
    assert b"".join(kept) == want
    assert decode(want) == attrs
    # `put` leaves out what says nothing: None and ""
    assert b"".join(keys[k].put(v, keep=True) for k, v in attrs.items()) == encode_attributes(
        b"\x4a", {k: v for k, v in attrs.items() if v != ""}
    )
    # keys that carry one value (a model) write it to each, kept or not, the same
    group = KeyGroup(*keys.values())
    for v in attrs.values():
        want = encode_attributes(b"\x4a", {k: v for k in keys}) if v != "" and v is not None else b""
        assert group.put(v) == group.put(v) == want


_count = st.integers(-3, 2**40) | st.integers(2**62, 2**64)
_maybe = st.none() | st.just("") | _text | st.integers(-3, 3)


def _int64(n: int) -> int:
    return (n + 2**63) % 2**64 - 2**63


@settings(max_examples=150, deadline=None)
@given(_text, st.dictionaries(st.sampled_from(TOKEN_KINDS), _count), _maybe, _maybe, _maybe, _maybe)
def test_a_turns_fields_decode_as_written_and_kept_runs_change_nothing(
    mid: str, tokens: dict[str, int], model: Any, provider: Any, finish: Any, error: Any
) -> None:
    """A turn's chat attributes, written from the message id encoded once and with the repeated
    model/provider/finish/error run kept, parse (opentelemetry-proto) as the dictionary encoder
    writes the same attributes, carry the conventions' token sums, and come out the same again."""
    mfield, rfield = message_fields(mid)
    assert (mfield, rfield) == (Key("octel.message.id").s(mid), Key("gen_ai.response.id").s(mid))
    assert Key("k").utf8(mid.encode()) == Key("k").s(mid)
    turn = {"tokens": tokens, "model": model, "provider": provider, "finish": finish, "error": error}
    head = session_heads("root", "sid")[0]
    first = chat_attributes(head, mfield, rfield, turn, [], None, False)
    assert chat_attributes(head, mfield, rfield, turn, [], None, False) == first
    attrs = decode(first)
    assert Span.FromString(first) == Span.FromString(encode_attributes(b"\x4a", attrs))
    t = {k: tokens.get(k, 0) for k in TOKEN_KINDS}
    assert attrs["gen_ai.usage.input_tokens"] == _int64(t["input"] + t["cache_read"] + t["cache_write"])
    assert attrs["gen_ai.usage.output_tokens"] == _int64(t["output"] + t["reasoning"])
    assert attrs["octel.message.id"] == attrs["gen_ai.response.id"] == mid
    assert ("gen_ai.request.model" in attrs) == (model is not None and model != "")
    assert ("error.type" in attrs) == (error is not None and error != "")
