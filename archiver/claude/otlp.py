"""An OTLP/HTTP export request from Claude Code (JSON or protobuf) -> the observations octel keeps.

Pure: no store, no clock. A body that is not an export request is an ``OtlpError`` naming the
field; inside a well-formed request, a data point or log record whose value octel would keep
cannot be stored (a count that is not a finite number from 0 to 10^12, a session id or model
that is not text, too long, or holds a NUL) is skipped and counted in ``Export.rejected``, as
OTLP's ``partialSuccess`` reports it, and the rest of the request is kept. Anything not sent by
Claude Code (other metrics and events, records without ``session.id``) is no concern of octel's
and skipped without a word.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from archiver.shape import RawJson

__all__ = ["MAX_AMOUNT", "Export", "Observation", "OtlpError", "decode", "read_export"]

_TOKEN_TYPES = {
    "input": "input",
    "output": "output",
    "cacheRead": "cache_read",
    "cacheCreation": "cache_write",
}
_EVENT_TOKENS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_tokens": "cache_read",
    "cache_creation_tokens": "cache_write",
}
MAX_AMOUNT = 1e12  # tokens or dollars in one data point: far above any real one, far below int64
_MAX_ID = 190  # session ids and models: the run key (`otel:` + id) fits its 200 characters
_MAX_TEXT = 1000  # error text, tool names and the parts of a key are cut to this, not refused


class OtlpError(ValueError):
    """The body is not an OTLP export request; the message names the field."""


class _Rejected(ValueError):
    """One data point or log record octel cannot keep; the message names the attribute."""


@dataclass(frozen=True)
class Observation:
    session_id: str
    key: str  # what makes a retried export idempotent
    kind: str  # metric_cost, metric_tokens, api_request, api_error, tool_result
    model: str | None = None
    value: float = 0.0
    tokens: Mapping[str, float] = field(default_factory=dict)
    detail: str = ""
    failed: bool = False


@dataclass(frozen=True)
class Export:
    """What one export request gave: the observations kept, and how many were refused and why
    (the first reason)."""

    found: list[Observation]
    rejected: int = 0
    message: str = ""


def decode(body: bytes, content_type: str, signal: str) -> RawJson:
    """An OTLP/HTTP body (JSON or protobuf) as OTLP/JSON (camelCase keys)."""
    if "protobuf" in content_type:
        cls = ExportMetricsServiceRequest if signal == "metrics" else ExportLogsServiceRequest
        try:
            return dict(MessageToDict(cls.FromString(body)))
        except DecodeError as e:
            raise OtlpError(f"body: not an OTLP {signal} protobuf message ({e})") from None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise OtlpError(f"body: not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise OtlpError("body: must be a JSON object")
    return doc


def _value(v: object) -> Any:
    if not isinstance(v, Mapping):
        return None
    for k in ("stringValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    if "intValue" in v:  # int64 travels as a string in OTLP/JSON
        got = v["intValue"]
        if isinstance(got, int) and not isinstance(got, bool):
            return got
        return int(got) if isinstance(got, str) and got.strip().lstrip("+-").isdigit() else got
    return None


def _attrs(items: object) -> RawJson:
    if not isinstance(items, list):
        return {}
    return {
        a["key"]: _value(a.get("value"))
        for a in items
        if isinstance(a, Mapping) and isinstance(a.get("key"), str)
    }


def _amount(v: object, name: str) -> float:
    """A count or a cost: absent is 0; anything but a finite number from 0 to MAX_AMOUNT is
    refused (a negative delta or NaN would corrupt every total it joins)."""
    if v is None:
        return 0.0
    try:
        got = float(v) if isinstance(v, int | float | str) and not isinstance(v, bool) else math.nan
    except (ValueError, OverflowError):
        got = math.nan
    if not (math.isfinite(got) and 0 <= got <= MAX_AMOUNT):
        raise _Rejected(f"{name}: must be a finite number from 0 to {MAX_AMOUNT:.0e}")
    return got


def _ident(v: object, name: str, *, required: bool = False) -> str | None:
    """A session id or a model: text (or an integer), no NUL, not too long."""
    if v is None or v == "":
        if required:
            raise _Rejected(f"{name}: required")
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if not isinstance(v, str):
        raise _Rejected(f"{name}: must be text")
    if "\x00" in v or len(v) > _MAX_ID:
        raise _Rejected(f"{name}: must be at most {_MAX_ID} characters, without NUL")
    return v


def _text(v: object) -> str:
    """Free text kept for the story (an error, a tool name): cut, never refused."""
    return "" if v is None else _part(v)


def _part(v: object) -> str:
    """One part of an observation's key, as it was always written (``None`` included), cut."""
    return str(v).replace("\x00", "")[:_MAX_TEXT]


def _list(doc: Mapping[str, Any], key: str, field_path: str) -> list[Mapping[str, Any]]:
    got = doc.get(key) or []
    if not isinstance(got, list):
        raise OtlpError(f"{field_path}: must be a list")
    return [x for x in got if isinstance(x, Mapping)]


def _points(m: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    where = "resourceMetrics.scopeMetrics.metrics.sum"
    got = m.get("sum") or {}
    if not isinstance(got, Mapping):
        raise OtlpError(f"{where}: must be an object")
    return _list(got, "dataPoints", f"{where}.dataPoints")


def _point(name: str, p: Mapping[str, Any]) -> Observation | None:
    a = _attrs(p.get("attributes"))
    if not a.get("session.id"):
        return None
    sid = str(_ident(a["session.id"], "session.id", required=True))
    model = _ident(a.get("model"), "model")
    v = _amount(p.get("asDouble", p.get("asInt")), "value")
    series = f"{name}|{model}|{_part(a.get('type'))}|{_part(a.get('query_source'))}"
    key = f"{series}|{_part(p.get('startTimeUnixNano'))}|{_part(p.get('timeUnixNano'))}"
    if name == "claude_code.cost.usage":
        return Observation(sid, key, "metric_cost", model, v)
    kind = _TOKEN_TYPES.get(a["type"]) if isinstance(a.get("type"), str) else None
    return Observation(sid, key, "metric_tokens", model, tokens={kind: v}) if kind else None


def _record(a: Mapping[str, Any]) -> Observation | None:
    event = a.get("event.name")
    if not a.get("session.id") or event not in ("api_request", "api_error", "tool_result"):
        return None
    sid = str(_ident(a["session.id"], "session.id", required=True))
    model = _ident(a.get("model"), "model")
    ids = (a.get("request_id") or "", a.get("tool_use_id") or "", a.get("event.sequence"))
    key = "|".join([str(event), *map(_part, ids)])
    if event == "api_request":
        toks = {k2: _amount(a.get(k), k) for k, k2 in _EVENT_TOKENS.items()}
        return Observation(sid, key, event, model, _amount(a.get("cost_usd"), "cost_usd"), toks)
    if event == "api_error":
        detail = f"{_text(a.get('status_code'))} {_text(a.get('error'))}".strip()
        return Observation(sid, key, event, model, detail=detail, failed=True)
    ok = str(a.get("success")).lower() == "true"
    return Observation(sid, key, event, detail=_text(a.get("tool_name")), failed=not ok)


def _metric_items(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for rm in _list(doc, "resourceMetrics", "resourceMetrics"):
        for sm in _list(rm, "scopeMetrics", "resourceMetrics.scopeMetrics"):
            for m in _list(sm, "metrics", "resourceMetrics.scopeMetrics.metrics"):
                name = m.get("name")
                if name in ("claude_code.cost.usage", "claude_code.token.usage"):
                    yield from ((str(name), p) for p in _points(m))


def _log_items(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    for rl in _list(doc, "resourceLogs", "resourceLogs"):
        for sl in _list(rl, "scopeLogs", "resourceLogs.scopeLogs"):
            yield from _list(sl, "logRecords", "resourceLogs.scopeLogs.logRecords")


def read_export(doc: Mapping[str, Any], signal: str) -> Export:
    """What octel keeps of one export request; OtlpError names a field of the wrong shape."""
    found: list[Observation] = []
    refused: list[str] = []
    if signal == "metrics":
        for name, p in _metric_items(doc):
            try:
                o = _point(name, p)
            except _Rejected as e:
                refused.append(f"{name}: {e}")
                continue
            if o is not None:
                found.append(o)
    else:
        for r in _log_items(doc):
            try:
                o = _record(_attrs(r.get("attributes")))
            except _Rejected as e:
                refused.append(str(e))
                continue
            if o is not None:
                found.append(o)
    return Export(found, len(refused), refused[0] if refused else "")
