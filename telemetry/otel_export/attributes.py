"""The attributes and events of each kind of span (pure; conventions.py documents every key).

Content (prompts, outputs, tool arguments and results) is added only when asked for, and is
the archive's text: redacted before it was stored, so nothing here redacts again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from archiver.metrics import TOKEN_KINDS
from detectors import REGISTRY
from telemetry.otel_export.claude_tools import is_claude
from telemetry.otel_export.spans import SpanEvent
from telemetry.otel_export.times import ms_to_ns

__all__ = [
    "agent_attributes",
    "chat_attributes",
    "cycle_attributes",
    "finding_event",
    "tool_attributes",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
_CONTENT_LIMIT = 32_000  # characters per attribute: backends refuse or cut larger values anyway

Attrs = dict[str, Any]
_TOKEN_KEYS = tuple(f"octel.tokens.{k}" for k in TOKEN_KINDS)


def _d(v: object) -> Mapping[str, Any]:
    if type(v) is dict:  # the common case, checked first: an ABC check costs more
        return v
    return v if isinstance(v, Mapping) else {}


def _put(attrs: Attrs, key: str, value: object) -> None:
    """Set only real values: OTLP has no null, and an empty attribute says nothing."""
    if type(value) is str:  # the common case, first
        if value:
            attrs[key] = value
        return
    if value is None:
        return
    attrs[key] = value if isinstance(value, str | bool | int | float | list) else str(value)


def _first_assistant(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    for m in doc.get("messages") or []:
        info = _d(_d(m).get("info"))
        if info.get("role") == "assistant":
            return info
    return {}


def agent_attributes(doc: Mapping[str, Any], root: str) -> Attrs:
    first = _first_assistant(doc)
    model = str(doc.get("model") or "")
    provider = first.get("providerID") or (model.split("/", 1)[0] if "/" in model else None)
    # Claude Code's main thread has no agent name of its own; its subagents have their type
    fallback = "main" if is_claude(doc) else "agent"
    agent = doc.get("agent") or first.get("agent") or first.get("mode") or fallback
    tot = _d(doc.get("totals"))
    tokens = _d(tot.get("tokens"))
    a: Attrs = {
        "gen_ai.operation.name": "invoke_agent",
        "openinference.span.kind": "AGENT",
        "gen_ai.agent.name": str(agent),
        "gen_ai.agent.id": str(doc["session_id"]),
        "gen_ai.conversation.id": root,
        "session.id": root,
        "octel.session.id": str(doc["session_id"]),
        "octel.session.depth": int(doc.get("depth") or 0),
        "octel.cost_usd": float(tot.get("cost") or 0.0),
    }
    _put(a, "gen_ai.provider.name", provider)
    _put(a, "octel.parent_session.id", doc.get("parent_session_id"))
    _put(a, "octel.session.title", doc.get("title"))
    _put(a, "octel.session.label", doc.get("label"))
    _put(a, "octel.session.verdict", doc.get("verdict"))
    for k, key in zip(TOKEN_KINDS, _TOKEN_KEYS, strict=True):
        a[key] = int(tokens.get(k) or 0)
    return a


def _text(parts: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(p.get("text") or "") for p in parts if p.get("type") == "text" and p.get("text"))


def _clip(text: str) -> str:
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "…"


def _messages(role: str, text: str, finish: object = None) -> str:
    msg: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": _clip(text)}]}
    if finish:
        msg["finish_reason"] = str(finish)
    return json.dumps([msg], ensure_ascii=False)


def chat_attributes(
    sid: str,
    root: str,
    info: Mapping[str, Any],
    turn: Mapping[str, Any],
    parts: Sequence[Mapping[str, Any]],
    prompt: Mapping[str, Any] | None,
    content: bool,
) -> Attrs:
    get = _d(turn.get("tokens")).get
    i, o, r, cr, cw = [int(get(k) or 0) for k in TOKEN_KINDS]  # the order TOKEN_KINDS names them
    prompt_tokens = i + cr + cw
    completion = o + r
    mid = str(info.get("id"))
    a: Attrs = {
        "gen_ai.operation.name": "chat",
        "openinference.span.kind": "LLM",
        "gen_ai.conversation.id": root,
        "session.id": root,
        "octel.session.id": sid,
        "octel.message.id": mid,
        "gen_ai.response.id": mid,
        "gen_ai.usage.input_tokens": prompt_tokens,
        "gen_ai.usage.output_tokens": completion,
        "gen_ai.usage.cache_read.input_tokens": cr,
        "gen_ai.usage.cache_creation.input_tokens": cw,
        "gen_ai.usage.reasoning.output_tokens": r,
        "llm.token_count.prompt": prompt_tokens,
        "llm.token_count.completion": completion,
        "llm.token_count.total": prompt_tokens + completion,
        "llm.token_count.prompt_details.cache_read": cr,
        "llm.token_count.prompt_details.cache_write": cw,
        "llm.token_count.completion_details.reasoning": r,
        "octel.cost_usd": float(turn.get("cost") or 0.0),
        "octel.turn.in_flight": bool(turn.get("in_flight")),
    }
    a.update(zip(_TOKEN_KEYS, (i, o, r, cr, cw), strict=True))
    model = turn.get("model")
    if type(model) is str:  # the common case: one value for the three keys
        if model:
            a["gen_ai.request.model"] = a["gen_ai.response.model"] = a["llm.model_name"] = model
    elif model is not None:
        for key in ("gen_ai.request.model", "gen_ai.response.model", "llm.model_name"):
            _put(a, key, model)
    provider = turn.get("provider")
    if provider is not None:
        _put(a, "gen_ai.provider.name", provider)
        _put(a, "llm.provider", provider)
    if turn.get("finish"):
        a["gen_ai.response.finish_reasons"] = [str(turn["finish"])]
    _put(a, "error.type", turn.get("error"))
    if content:
        if prompt is not None:
            asked = _text([p for p in prompt.get("parts") or [] if isinstance(p, Mapping)])
            _put(a, "gen_ai.input.messages", _messages("user", asked) if asked else None)
            _put(a, "input.value", _clip(asked))
        said = _text(parts)
        _put(a, "gen_ai.output.messages", _messages("assistant", said, turn.get("finish")) if said else None)
        _put(a, "output.value", _clip(said))
    return a


def tool_attributes(sid: str, root: str, message_id: str, part: Mapping[str, Any], content: bool) -> Attrs:
    state = _d(part.get("state"))
    a: Attrs = {
        "gen_ai.operation.name": "execute_tool",
        "openinference.span.kind": "TOOL",
        "gen_ai.tool.type": "function",
        "gen_ai.conversation.id": root,
        "session.id": root,
        "octel.session.id": sid,
        "octel.message.id": message_id,
    }
    _put(a, "gen_ai.tool.name", part.get("tool"))
    _put(a, "tool.name", part.get("tool"))
    _put(a, "gen_ai.tool.call.id", part.get("callID"))
    _put(a, "octel.part.id", part.get("id"))
    _put(a, "octel.tool.status", state.get("status"))
    if state.get("status") == "error":
        a["error.type"] = "tool_error"
    if content:
        args = (
            json.dumps(state.get("input"), ensure_ascii=False, sort_keys=True) if "input" in state else None
        )
        result = state.get("output") if state.get("status") != "error" else state.get("error")
        _put(a, "gen_ai.tool.call.arguments", _clip(args) if args else None)
        _put(a, "input.value", _clip(args) if args else None)
        _put(a, "gen_ai.tool.call.result", _clip(str(result)) if result is not None else None)
        _put(a, "output.value", _clip(str(result)) if result is not None else None)
    return a


def cycle_attributes(
    cycle_id: str,
    driver: str,
    counts: Mapping[str, int | None],
    terminal_state: str | None,
    worker_outcome: str | None,
    error_kind: str | None,
    root: str,
    in_flight: bool,
) -> Attrs:
    a: Attrs = {
        "openinference.span.kind": "CHAIN",
        "session.id": root,
        "octel.cycle.id": cycle_id,
        "octel.cycle.driver": driver,
        "octel.cycle.in_flight": in_flight,
    }
    for name in ("candidates", "claims", "swept", "processed", "escalated"):
        v = counts.get(name)
        if isinstance(v, int):
            a[f"octel.cycle.{name}"] = v
    _put(a, "octel.cycle.terminal_state", terminal_state)
    _put(a, "octel.cycle.worker_outcome", worker_outcome)
    _put(a, "error.type", error_kind)
    return a


def _summary(detector: str) -> str:
    spec = REGISTRY.spec(detector)
    return spec.summary if spec is not None else "a pattern this detector looks for"


def finding_event(f: Mapping[str, Any], messages: Sequence[Mapping[str, Any]], fallback_ns: int) -> SpanEvent:
    """A detector finding as a `gen_ai.evaluation.result` event, at the message where it began."""
    detector = str(f.get("detector") or "unknown")
    verdict = str(f.get("verdict") or "healthy")
    score = float(f.get("score") or 0.0)
    start = f.get("start_index")
    at = fallback_ns
    where = ""
    if isinstance(start, int) and 0 <= start < len(messages):
        at = ms_to_ns(_d(_d(_d(messages[start]).get("info")).get("time")).get("created"), fallback_ns)
        where = f", from message {start}"
    explanation = f"{detector} {verdict} (score {score:.2f}): {_summary(detector)}{where}."
    attrs: dict[str, Any] = {
        "gen_ai.evaluation.name": detector,
        "gen_ai.evaluation.score.value": score,
        "gen_ai.evaluation.score.label": verdict,
        "gen_ai.evaluation.explanation": explanation,
    }
    if isinstance(start, int):
        attrs["octel.finding.start_index"] = start
    return SpanEvent(EVALUATION_EVENT, at, attrs)
