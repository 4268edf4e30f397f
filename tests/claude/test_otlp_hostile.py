"""The OTLP receiver against what a broken or hostile exporter sends: any shape, any attribute
value type, NaN, infinities, negative and huge counts, NUL, secrets, truncated protobuf, gzip
good, bad and explosive. Never a 5xx; what is kept passes the redactor and fits the store; a
data point octel cannot keep is counted in OTLP's `partialSuccess`, the rest is kept."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from google.protobuf.json_format import ParseDict, ParseError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from sqlmodel import select

from archiver.claude.otlp import MAX_AMOUNT, OtlpError, read_export
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.models import AgentRun, Aggregate
from web.app import create_app
from web.app_state import app_state

AUTH = {"Authorization": "Bearer test-token-0123456789"}
# secrets every redactor knows by their shape (all fake), and one the settings name
SECRETS = [
    "ghp_FAKEfakeFAKEfakeFAKEfakeFAKEfake1234",
    "sk-ant-api03-FAKEfakeFAKEfakeFAKEfake-00",
    "AKIAFAKEFAKEFAKEFAKE",
    "acct-7731-0099-4412",
]
USED = [
    "session.id",
    "model",
    "type",
    "event.name",
    "request_id",
    "tool_use_id",
    "event.sequence",
    "cost_usd",
    "input_tokens",
    "error",
    "status_code",
    "tool_name",
    "success",
]

_text = st.one_of(
    st.sampled_from(["s-1", "s-2", "claude-opus-5-5", "input", "output", "cacheRead", "api_request"]),
    st.sampled_from(["api_error", "tool_result", "", "NaN", "-1", "1e400", "Infinity"]),
    st.sampled_from(SECRETS),
    st.builds(lambda s: f"id {s} end", st.sampled_from(SECRETS)),
    st.text(max_size=12),
    st.just("x" * 300),
)
_number = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "12", "-3", "1e308", "abc", ""]),
)
_json = st.recursive(
    st.none() | st.booleans() | _number | _text, lambda c: st.lists(c, max_size=3), max_leaves=6
)
_value = st.one_of(
    st.builds(lambda v: {"stringValue": v}, _text),
    st.builds(lambda v: {"intValue": v}, _number),
    st.builds(lambda v: {"doubleValue": v}, _number),
    st.builds(lambda v: {"boolValue": v}, st.booleans()),
    st.just({"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "b"}}]}}),
    st.just({"arrayValue": {"values": [{"stringValue": "a"}]}}),
    st.just({"bytesValue": "AAAA"}),
    _json,
)
_attr = st.one_of(
    st.builds(lambda k, v: {"key": k, "value": v}, st.sampled_from(USED) | st.text(max_size=5), _value),
    _json,
)
_attrs = st.lists(_attr, max_size=6) | _json
_point = (
    st.fixed_dictionaries(
        {"attributes": _attrs},
        optional={"asDouble": _number, "asInt": _number, "timeUnixNano": _number | _text},
    )
    | _json
)
_sum = st.fixed_dictionaries({}, optional={"dataPoints": st.lists(_point, max_size=3) | _json})
_metric = st.fixed_dictionaries(
    {"name": st.sampled_from(["claude_code.cost.usage", "claude_code.token.usage", "other"]) | _text},
    optional={"sum": _sum | _json},
)
_record = st.fixed_dictionaries({"attributes": _attrs}) | _json
_metrics = st.builds(
    lambda ms: {"resourceMetrics": [{"scopeMetrics": [{"metrics": ms}]}]},
    st.lists(_metric, max_size=3) | _json,
)
_logs = st.builds(
    lambda rs: {"resourceLogs": [{"scopeLogs": [{"logRecords": rs}]}]}, st.lists(_record, max_size=4) | _json
)


@given(st.one_of(_metrics.map(lambda d: ("metrics", d)), _logs.map(lambda d: ("logs", d))))
@settings(max_examples=300, deadline=None)
def test_reading_any_request_refuses_its_shape_or_keeps_only_what_fits(case: tuple[str, Any]) -> None:
    signal, doc = case
    try:
        got = read_export(doc, signal)
    except OtlpError as e:
        assert str(e).split(":", 1)[0].startswith(("resource", "body"))
        return
    for o in got.found:
        amounts = [o.value, *o.tokens.values()]
        assert all(math.isfinite(v) and 0 <= v <= MAX_AMOUNT for v in amounts)
        assert o.session_id and "\x00" not in o.session_id and len(o.session_id) <= 190
        assert o.model is None or ("\x00" not in o.model and len(o.model) <= 190)
        assert "\x00" not in o.key + o.detail
    assert (got.rejected > 0) == bool(got.message)


@pytest.fixture
def octel(settings: Settings) -> Iterator[TestClient]:
    s = settings.model_copy(update={"redact_values": SECRETS[-1]})
    with TestClient(create_app(s), raise_server_exceptions=False) as c:
        yield c


def _stored(client: TestClient) -> str:
    with session_scope(app_state(client.app).engine, write=False) as db:
        rows = [*db.exec(select(AgentRun)).all(), *db.exec(select(Aggregate)).all()]
        return json.dumps([r.model_dump(mode="json") for r in rows])


def _bodies(signal: str, doc: Any) -> Iterator[tuple[bytes, dict[str, str]]]:
    """The request as JSON, gzipped JSON and, when it is a valid message, protobuf."""
    text = json.dumps(doc).encode()
    yield text, {"Content-Type": "application/json"}
    yield gzip.compress(text), {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    cls = ExportMetricsServiceRequest if signal == "metrics" else ExportLogsServiceRequest
    try:
        pb = ParseDict(doc, cls()).SerializeToString()
    except (ParseError, ValueError, TypeError, AttributeError):
        return
    yield pb, {"Content-Type": "application/x-protobuf"}
    yield pb[: len(pb) // 2], {"Content-Type": "application/x-protobuf"}


@given(st.one_of(_metrics.map(lambda d: ("metrics", d)), _logs.map(lambda d: ("logs", d))))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_no_export_request_is_a_5xx_and_nothing_stored_holds_a_secret(
    octel: TestClient, case: tuple[str, Any]
) -> None:
    signal, doc = case
    for body, headers in _bodies(signal, doc):
        r = octel.post(f"/v1/{signal}", content=body, headers={**AUTH, **headers})
        assert r.status_code < 500, r.text
        assert r.status_code in (200, 400), r.text
    stored = _stored(octel)
    assert not [s for s in SECRETS if s in stored]
    assert "\\u0000" not in stored


def _cost_point(sid: str, value: object, model: str = "claude-opus-5-5") -> dict[str, Any]:
    attrs = [
        {"key": "session.id", "value": {"stringValue": sid}},
        {"key": "model", "value": {"stringValue": model}},
    ]
    return {"attributes": attrs, "asDouble": value, "timeUnixNano": str(hash((sid, str(value))) & 0xFFFF)}


def _cost(*points: dict[str, Any]) -> dict[str, Any]:
    metric = {"name": "claude_code.cost.usage", "sum": {"dataPoints": list(points)}}
    return {"resourceMetrics": [{"scopeMetrics": [{"metrics": [metric]}]}]}


@pytest.mark.parametrize("bad", ["NaN", "Infinity", -1.0, 1e300, "abc"])
def test_a_bad_data_point_is_counted_as_rejected_and_the_rest_is_kept(octel: TestClient, bad: object) -> None:
    doc = _cost(_cost_point("s-good", 0.5), _cost_point("s-bad", bad))
    r = octel.post("/v1/metrics", json=doc, headers=AUTH)
    assert r.status_code == 200, r.text
    assert r.json()["partialSuccess"]["rejectedDataPoints"] == "1"
    assert "value" in r.json()["partialSuccess"]["errorMessage"]
    stored = json.loads(_stored(octel))
    assert [(x["session_id"], x["cost_usd"]) for x in stored if "run_key" in x] == [("s-good", 0.5)]


def test_the_protobuf_answer_carries_the_partial_success(octel: TestClient) -> None:
    body = ParseDict(_cost(_cost_point("s-1", "NaN")), ExportMetricsServiceRequest()).SerializeToString()
    r = octel.post("/v1/metrics", content=body, headers={**AUTH, "Content-Type": "application/x-protobuf"})
    assert r.status_code == 200
    answer = ExportMetricsServiceResponse.FromString(r.content)
    assert answer.partial_success.rejected_data_points == 1


def test_secret_session_ids_and_models_are_redacted_and_a_retry_finds_the_same_run(octel: TestClient) -> None:
    doc = _cost(_cost_point(SECRETS[0], 0.25, model=f"model {SECRETS[-1]}"))
    for _ in range(2):
        assert octel.post("/v1/metrics", json=doc, headers=AUTH).status_code == 200
    stored = _stored(octel)
    assert SECRETS[0] not in stored and SECRETS[-1] not in stored
    (run,) = [x for x in json.loads(stored) if "run_key" in x]
    assert run["session_id"].startswith("[REDACTED:github:") and run["cost_usd"] == 0.25
    assert "[REDACTED:configured:" in run["model"]


def test_gzip_bodies_are_read_and_bad_or_explosive_gzip_is_a_4xx(octel: TestClient) -> None:
    doc = json.dumps(_cost(_cost_point("s-gz", 1.0))).encode()
    gz = {**AUTH, "Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert octel.post("/v1/metrics", content=gzip.compress(doc), headers=gz).status_code == 200
    bad = octel.post("/v1/metrics", content=b"\x1f\x8bnot gzip", headers=gz)
    assert bad.status_code == 400 and bad.json()["error"]["fields"][0]["field"] == "body"
    cut = octel.post("/v1/metrics", content=gzip.compress(doc)[:-12], headers=gz)
    assert cut.status_code == 400 and "cut short" in cut.text
    bomb = gzip.compress(b" " * (64 * 2**20))  # 64 KiB on the wire, 64 MiB inflated
    assert len(bomb) < 2**20
    r = octel.post("/v1/metrics", content=bomb, headers=gz)
    assert r.status_code == 413, r.text
    other = octel.post("/v1/metrics", content=doc, headers={**gz, "Content-Encoding": "br"})
    assert other.status_code == 400 and "content-encoding" in other.text
    assert [x["session_id"] for x in json.loads(_stored(octel)) if "run_key" in x] == ["s-gz"]
