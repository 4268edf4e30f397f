"""Claude Code's own telemetry (OTLP/HTTP, JSON or protobuf) -> one agent run per ``session.id``.

A fleet that cannot wrap the CLI still gets costs and errors: Claude Code exports
``claude_code.cost.usage`` and ``claude_code.token.usage`` (delta sums) and the events
``api_request`` (usage and cost of one API call), ``api_error`` and ``tool_result``. Each session
becomes one ``agent_run`` row (``run_key = otel:<session.id>``). Usage is tallied twice, from the
metrics and from the request events, and the row takes the larger of the two, so a fleet that
exports only one of them is counted, and one that exports both is not counted twice. Every
observation has a key (the request id, or the data point's series and time): an exporter that
retries a batch changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from sqlmodel import Session, select

from archiver.redact import Redactor
from telemetry.store import aggregates
from telemetry.store.locks import lock_key
from telemetry.store.models import AgentRun

__all__ = ["Observation", "OtlpError", "apply", "decode", "observations"]

_TOKEN_TYPES = {
    "input": "input",
    "output": "output",
    "cacheRead": "cache_read",
    "cacheCreation": "cache_write",
}
_EVENT_TOKENS = {"input_tokens": "input", "output_tokens": "output", "cache_read_tokens": "cache_read",
                 "cache_creation_tokens": "cache_write"}  # fmt: skip
_KEEP_ERRORS = 20


class OtlpError(ValueError):
    """The body is not an OTLP export request; the message names the field."""


def decode(body: bytes, content_type: str, signal: str) -> dict[str, Any]:
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


def _value(v: Mapping[str, Any]) -> Any:
    for k in ("stringValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    if "intValue" in v:
        return int(v["intValue"])  # int64 travels as a string in OTLP/JSON
    return None


def _attrs(items: object) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {a["key"]: _value(a.get("value") or {}) for a in items if isinstance(a, Mapping) and "key" in a}


def _num(v: object) -> float:
    if not isinstance(v, int | float | str) or isinstance(v, bool):
        return 0.0
    try:
        return float(v)
    except ValueError:
        return 0.0


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


def _list(doc: Mapping[str, Any], key: str, field_path: str) -> list[Mapping[str, Any]]:
    got = doc.get(key) or []
    if not isinstance(got, list):
        raise OtlpError(f"{field_path}: must be a list")
    return [x for x in got if isinstance(x, Mapping)]


def _from_metrics(doc: Mapping[str, Any]) -> Iterator[Observation]:
    for rm in _list(doc, "resourceMetrics", "resourceMetrics"):
        for sm in _list(rm, "scopeMetrics", "resourceMetrics.scopeMetrics"):
            for m in _list(sm, "metrics", "resourceMetrics.scopeMetrics.metrics"):
                name = m.get("name")
                if name not in ("claude_code.cost.usage", "claude_code.token.usage"):
                    continue
                for p in (m.get("sum") or {}).get("dataPoints") or []:
                    a = _attrs(p.get("attributes"))
                    sid = a.get("session.id")
                    if not sid:
                        continue
                    v = _num(p.get("asDouble", p.get("asInt")))
                    series = f"{name}|{a.get('model')}|{a.get('type')}|{a.get('query_source')}"
                    key = f"{series}|{p.get('startTimeUnixNano')}|{p.get('timeUnixNano')}"
                    if name == "claude_code.cost.usage":
                        yield Observation(str(sid), key, "metric_cost", a.get("model"), v)
                    elif a.get("type") in _TOKEN_TYPES:
                        yield Observation(str(sid), key, "metric_tokens", a.get("model"),
                                          tokens={_TOKEN_TYPES[a["type"]]: v})  # fmt: skip


def _from_logs(doc: Mapping[str, Any]) -> Iterator[Observation]:
    for rl in _list(doc, "resourceLogs", "resourceLogs"):
        for sl in _list(rl, "scopeLogs", "resourceLogs.scopeLogs"):
            for r in _list(sl, "logRecords", "resourceLogs.scopeLogs.logRecords"):
                a = _attrs(r.get("attributes"))
                event, sid = a.get("event.name"), a.get("session.id")
                if not sid or event not in ("api_request", "api_error", "tool_result"):
                    continue
                ids = (a.get("request_id") or "", a.get("tool_use_id") or "", a.get("event.sequence"))
                key = f"{event}|{ids[0]}|{ids[1]}|{ids[2]}"
                if event == "api_request":
                    toks = {k2: _num(a.get(k)) for k, k2 in _EVENT_TOKENS.items()}
                    yield Observation(str(sid), key, event, a.get("model"), _num(a.get("cost_usd")), toks)
                elif event == "api_error":
                    detail = f"{a.get('status_code') or ''} {a.get('error') or ''}".strip()
                    yield Observation(str(sid), key, event, a.get("model"), detail=detail, failed=True)
                else:
                    ok = str(a.get("success")).lower() == "true"
                    yield Observation(
                        str(sid), key, event, detail=str(a.get("tool_name") or ""), failed=not ok
                    )


def observations(doc: Mapping[str, Any], signal: str) -> list[Observation]:
    """What octel keeps of one export request; OtlpError names a field of the wrong shape."""
    return list(_from_metrics(doc) if signal == "metrics" else _from_logs(doc))


def _tally(raw: dict[str, Any], name: str) -> dict[str, Any]:
    got: dict[str, Any] = raw.setdefault(
        name, {"cost": 0.0, "tokens": {k: 0.0 for k in _TOKEN_TYPES.values()}, "models": {}}
    )
    return got


def _observe(raw: dict[str, Any], o: Observation) -> None:
    events = raw.setdefault("events", {})
    events[o.kind] = events.get(o.kind, 0) + 1
    source = _tally(raw, "metrics" if o.kind.startswith("metric") else "requests")
    model = source["models"].setdefault(
        o.model or "unknown", {"cost": 0.0, **{k: 0.0 for k in _TOKEN_TYPES.values()}}
    )
    if o.kind in ("metric_cost", "api_request"):
        source["cost"] += o.value
        model["cost"] += o.value
    for k, v in o.tokens.items():
        source["tokens"][k] += v
        model[k] += v
    if o.kind == "api_error":
        raw["errors"] = [*raw.get("errors", []), o.detail][-_KEEP_ERRORS:]
    if o.kind in ("api_request", "api_error"):
        raw["last_api"] = o.kind
    if o.kind == "tool_result" and o.failed:  # kept for the run's story, not a cost
        raw["tool_failures"] = raw.get("tool_failures", 0) + 1


def _model_usage(v: Mapping[str, float]) -> dict[str, float]:
    """One model's tally in the CLI's own ``modelUsage`` shape."""
    return {
        "costUSD": v["cost"],
        "inputTokens": v["input"],
        "outputTokens": v["output"],
        "cacheReadInputTokens": v["cache_read"],
        "cacheCreationInputTokens": v["cache_write"],
    }


def apply(db: Session, found: list[Observation], now: datetime, redactor: Redactor) -> int:
    """Fold the observations into their sessions' runs; returns how many were new."""
    new = 0
    for sid in sorted({o.session_id for o in found}):
        key = f"otel:{sid}"
        lock_key(db, "agent_run", key)
        row = db.exec(select(AgentRun).where(AgentRun.run_key == key)).first()
        created = row is None
        if row is None:
            row = AgentRun(
                run_key=key, agent="claude-code", session_id=sid, subtype="otel", created_at=now, raw={}
            )
        raw = dict(row.raw or {})
        seen = set(raw.get("seen", []))
        before_cost = row.cost_usd
        before_tokens = {
            "input": row.input_tokens,
            "output": row.output_tokens,
            "cache_read": row.cache_read_tokens,
            "cache_write": row.cache_creation_tokens,
        }
        for o in found:
            if o.session_id == sid and o.key not in seen:
                seen.add(o.key)
                _observe(raw, o)
                new += 1
        raw["seen"] = sorted(seen)
        m, r = _tally(raw, "metrics"), _tally(raw, "requests")
        row.cost_usd = max(m["cost"], r["cost"])
        tokens = {k: int(max(m["tokens"][k], r["tokens"][k])) for k in before_tokens}
        row.input_tokens, row.output_tokens = tokens["input"], tokens["output"]
        row.cache_read_tokens, row.cache_creation_tokens = tokens["cache_read"], tokens["cache_write"]
        models = r["models"] if r["cost"] >= m["cost"] else m["models"]
        row.model = max(models, key=lambda k: models[k]["cost"], default=None)
        row.num_turns = int(raw.get("events", {}).get("api_request", 0))
        row.is_error = raw.get("last_api") == "api_error"
        row.model_usage = {k: _model_usage(v) for k, v in models.items()}
        row.raw, _ = redactor.redact_obj(raw)
        db.add(row)
        labels = {"agent": "claude-code", "model": row.model or ""}
        if created:  # a session's telemetry counts as one run, once, with the outcome known then
            outcome = "error" if row.is_error else "success"
            aggregates.bump(db, "agent_runs_total", {**labels, "outcome": outcome}, 1)
        if row.cost_usd > before_cost:
            aggregates.bump(db, "agent_run_cost_usd_total", labels, row.cost_usd - before_cost)
        for kind, v in tokens.items():
            if v > before_tokens[kind]:
                aggregates.bump(
                    db, "agent_run_tokens_total", {**labels, "kind": kind}, v - before_tokens[kind]
                )
    db.flush()
    return new
