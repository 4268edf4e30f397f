"""The attributes and events of each kind of span (pure; conventions.py documents every key).

Attributes are written as encoded Span fields (`fields.Key`), in the order a span carries them,
straight from the archive's fields: the parts every span of a session shares (`session_heads`)
once per session, a turn's token counts encoded once per value. Events stay records (a finding
is rare). Content (prompts, outputs, tool arguments and results) is added only when asked for,
and is the archive's text: redacted before it was stored, so nothing here redacts again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from archiver.metrics import TOKEN_KINDS
from detectors import REGISTRY
from telemetry.otel_export.claude_tools import is_claude
from telemetry.otel_export.fields import Key, KeyGroup
from telemetry.otel_export.spans import SpanEvent
from telemetry.otel_export.times import ms_to_ns
from telemetry.otel_export.wire import varint

__all__ = [
    "agent_attributes",
    "chat_attributes",
    "cycle_attributes",
    "cycle_id_attribute",
    "finding_event",
    "message_field",
    "session_heads",
    "tool_attributes",
]

EVALUATION_EVENT = "gen_ai.evaluation.result"
_CONTENT_LIMIT = 32_000  # characters per attribute: backends refuse or cut larger values anyway

_OP, _KIND = Key("gen_ai.operation.name"), Key("openinference.span.kind")
_CONV, _SESSION, _SID = Key("gen_ai.conversation.id"), Key("session.id"), Key("octel.session.id")
_MESSAGE = Key("octel.message.id")
_TOKENS = tuple(Key(f"octel.tokens.{k}") for k in TOKEN_KINDS)
_COST = Key("octel.cost_usd")
_PROVIDER = Key("gen_ai.provider.name")
_ERROR = Key("error.type")

_AGENT_OP = _OP.s("invoke_agent") + _KIND.s("AGENT")
_AGENT, _AGENT_ID, _DEPTH = Key("gen_ai.agent.name"), Key("gen_ai.agent.id"), Key("octel.session.depth")
_PARENT, _TITLE = Key("octel.parent_session.id"), Key("octel.session.title")
_LABEL, _VERDICT = Key("octel.session.label"), Key("octel.session.verdict")

_CHAT_OP = _OP.s("chat") + _KIND.s("LLM")
_RESPONSE_ID = Key("gen_ai.response.id")
# in the order a turn's span carries them: the conventions' token counts, then OpenInference's
_IN, _OUT, _CACHE_READ, _CACHE_WRITE, _REASONING, _PROMPT, _COMPLETION, _TOTAL = (
    Key(k) for k in (
        "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.reasoning.output_tokens", "llm.token_count.prompt",
        "llm.token_count.completion", "llm.token_count.total",
    )
)  # fmt: skip
_LLM_CACHE_READ = Key("llm.token_count.prompt_details.cache_read")
_LLM_CACHE_WRITE = Key("llm.token_count.prompt_details.cache_write")
_LLM_REASONING = Key("llm.token_count.completion_details.reasoning")
_IN_FLIGHT = Key("octel.turn.in_flight")
_MODEL_FIELDS = KeyGroup(Key("gen_ai.request.model"), Key("gen_ai.response.model"), Key("llm.model_name"))
_PROVIDER_FIELDS = KeyGroup(_PROVIDER, Key("llm.provider"))
_H_IN, _H_OUT, _H_CACHE_READ, _H_CACHE_WRITE, _H_REASONING = (
    k.int_heads for k in (_IN, _OUT, _CACHE_READ, _CACHE_WRITE, _REASONING)
)
_H_PROMPT, _H_COMPLETION, _H_TOTAL = _PROMPT.int_heads, _COMPLETION.int_heads, _TOTAL.int_heads
_H_LLM_CACHE_READ, _H_LLM_CACHE_WRITE = _LLM_CACHE_READ.int_heads, _LLM_CACHE_WRITE.int_heads
_H_LLM_REASONING = _LLM_REASONING.int_heads
_H_T0, _H_T1, _H_T2, _H_T3, _H_T4 = (k.int_heads for k in _TOKENS)
_INT64 = 1 << 63
_FINISH = Key("gen_ai.response.finish_reasons")
_INPUT_MESSAGES, _OUTPUT_MESSAGES = Key("gen_ai.input.messages"), Key("gen_ai.output.messages")
_INPUT, _OUTPUT = Key("input.value"), Key("output.value")

_TOOL_OP = _OP.s("execute_tool") + _KIND.s("TOOL") + Key("gen_ai.tool.type").s("function")
_TOOL, _TOOL_NAME, _CALL = Key("gen_ai.tool.name"), Key("tool.name"), Key("gen_ai.tool.call.id")
_PART, _STATUS = Key("octel.part.id"), Key("octel.tool.status")
_TOOL_ERROR = _ERROR.s("tool_error")
_ARGUMENTS, _RESULT = Key("gen_ai.tool.call.arguments"), Key("gen_ai.tool.call.result")

_CYCLE_KIND = _KIND.s("CHAIN")
_CYCLE_ID, _DRIVER = Key("octel.cycle.id"), Key("octel.cycle.driver")
_CYCLE_IN_FLIGHT = Key("octel.cycle.in_flight")
_COUNTS = tuple(
    (n, Key(f"octel.cycle.{n}")) for n in ("candidates", "claims", "swept", "processed", "escalated")
)
_TERMINAL, _OUTCOME = Key("octel.cycle.terminal_state"), Key("octel.cycle.worker_outcome")


def _d(v: object) -> Mapping[str, Any]:
    if type(v) is dict:  # the common case, checked first: an ABC check costs more
        return v
    return v if isinstance(v, Mapping) else {}


def _first_assistant(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    for m in doc.get("messages") or []:
        info = _d(_d(m).get("info"))
        if info.get("role") == "assistant":
            return info
    return {}


def agent_attributes(doc: Mapping[str, Any], root: str) -> tuple[str, bytes]:
    """(the agent's name, the invoke_agent span's attributes)."""
    first = _first_assistant(doc)
    model = str(doc.get("model") or "")
    provider = first.get("providerID") or (model.split("/", 1)[0] if "/" in model else None)
    # Claude Code's main thread has no agent name of its own; its subagents have their type
    fallback = "main" if is_claude(doc) else "agent"
    agent = str(doc.get("agent") or first.get("agent") or first.get("mode") or fallback)
    tot = _d(doc.get("totals"))
    tokens = _d(tot.get("tokens"))
    sid = str(doc["session_id"])
    a = [
        _AGENT_OP, _AGENT.kept(agent), _AGENT_ID.s(sid), _CONV.s(root), _SESSION.s(root), _SID.s(sid),
        _DEPTH.i(int(doc.get("depth") or 0)), _COST.f(float(tot.get("cost") or 0.0)),
        _PROVIDER.put(provider, keep=True), _PARENT.put(doc.get("parent_session_id")),
        _TITLE.put(doc.get("title")), _LABEL.put(doc.get("label"), keep=True),
        _VERDICT.put(doc.get("verdict"), keep=True),
    ]  # fmt: skip
    a += [key.i(int(tokens.get(k) or 0)) for k, key in zip(TOKEN_KINDS, _TOKENS, strict=True)]
    return agent, b"".join(a)


def cycle_id_attribute(cycle_id: str) -> bytes:
    """`octel.cycle.id`, which the root's invoke_agent span carries after its own attributes."""
    return _CYCLE_ID.s(cycle_id)


def session_heads(root: str, sid: str) -> tuple[bytes, bytes]:
    """The attributes every chat and every execute_tool span of a session starts with."""
    common = _CONV.s(root) + _SESSION.s(root) + _SID.s(sid)
    return _CHAT_OP + common, _TOOL_OP + common


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
    head: bytes,
    mid: str,
    message_id: bytes,
    turn: Mapping[str, Any],
    parts: Sequence[Mapping[str, Any]],
    prompt: Mapping[str, Any] | None,
    content: bool,
) -> bytes:
    """A turn's chat span attributes; ``head`` is the session's (`session_heads`), ``message_id``
    the message's `message_field`."""
    get = _d(turn.get("tokens")).get
    # the order TOKEN_KINDS names them: input, output, reasoning, cache_read, cache_write
    i, o, r = int(get("input") or 0), int(get("output") or 0), int(get("reasoning") or 0)
    cr, cw = int(get("cache_read") or 0), int(get("cache_write") or 0)
    p = i + cr + cw
    c = o + r
    cost = _COST.f(float(turn.get("cost") or 0.0))
    flight = _IN_FLIGHT.b(bool(turn.get("in_flight")))
    if i >= 0 and o >= 0 and r >= 0 and cr >= 0 and cw >= 0 and p + c < _INT64:
        # each count's varint once (p, c, cr, cw and r go to two or three keys), then each field
        # is its key's fixed bytes for that length and the varint
        v = varint
        vi, vo, vr, vcr, vcw, vp, vc, vt = v(i), v(o), v(r), v(cr), v(cw), v(p), v(c), v(p + c)
        li, lo, lr, lcr, lcw, lp, lc = len(vi), len(vo), len(vr), len(vcr), len(vcw), len(vp), len(vc)
        a = [
            head, message_id, _RESPONSE_ID.s(mid), _H_IN[lp], vp, _H_OUT[lc], vc,
            _H_CACHE_READ[lcr], vcr, _H_CACHE_WRITE[lcw], vcw, _H_REASONING[lr], vr,
            _H_PROMPT[lp], vp, _H_COMPLETION[lc], vc, _H_TOTAL[len(vt)], vt,
            _H_LLM_CACHE_READ[lcr], vcr, _H_LLM_CACHE_WRITE[lcw], vcw, _H_LLM_REASONING[lr], vr,
            cost, flight, _H_T0[li], vi, _H_T1[lo], vo, _H_T2[lr], vr, _H_T3[lcr], vcr, _H_T4[lcw], vcw,
        ]  # fmt: skip
    else:  # a negative or huge count (a damaged document): as int64 does, field by field
        a = [
            head, message_id, _RESPONSE_ID.s(mid), _IN.i(p), _OUT.i(c), _CACHE_READ.i(cr),
            _CACHE_WRITE.i(cw), _REASONING.i(r), _PROMPT.i(p), _COMPLETION.i(c), _TOTAL.i(p + c),
            _LLM_CACHE_READ.i(cr), _LLM_CACHE_WRITE.i(cw), _LLM_REASONING.i(r), cost, flight,
            _TOKENS[0].i(i), _TOKENS[1].i(o), _TOKENS[2].i(r), _TOKENS[3].i(cr), _TOKENS[4].i(cw),
        ]  # fmt: skip
    model = turn.get("model")
    if model is not None:
        a.append(_MODEL_FIELDS.put(model))
    provider = turn.get("provider")
    if provider is not None:
        a.append(_PROVIDER_FIELDS.put(provider))
    finish = turn.get("finish")
    if finish:
        a.append(_FINISH.one_string_list(str(finish)))
    a.append(_ERROR.put(turn.get("error"), keep=True))
    if content:
        if prompt is not None:
            asked = _text([p for p in prompt.get("parts") or [] if isinstance(p, Mapping)])
            a.append(_INPUT_MESSAGES.put(_messages("user", asked) if asked else None))
            a.append(_INPUT.put(_clip(asked)))
        said = _text([p for p in parts if isinstance(p, Mapping)])
        a.append(_OUTPUT_MESSAGES.put(_messages("assistant", said, finish) if said else None))
        a.append(_OUTPUT.put(_clip(said)))
    return b"".join(a)


def tool_attributes(
    head: bytes,
    message_id: bytes,
    tool: object,
    call: object,
    part_id: object,
    status: object,
    state: Mapping[str, Any],
    content: bool,
) -> bytes:
    """A tool call's execute_tool span attributes, from its part's `tool`, `callID`, `id` and
    `state` (and its `status`); ``head`` is the session's (`session_heads`), ``message_id`` its
    message's `message_field`."""
    a = [
        head, message_id, _TOOL.put(tool, keep=True), _TOOL_NAME.put(tool, keep=True), _CALL.put(call),
        _PART.put(part_id), _STATUS.put(status, keep=True),
    ]  # fmt: skip
    if status == "error":
        a.append(_TOOL_ERROR)
    if content:
        args = (
            json.dumps(state.get("input"), ensure_ascii=False, sort_keys=True) if "input" in state else None
        )
        result = state.get("output") if status != "error" else state.get("error")
        a.append(_ARGUMENTS.put(_clip(args) if args else None))
        a.append(_INPUT.put(_clip(args) if args else None))
        a.append(_RESULT.put(_clip(str(result)) if result is not None else None))
        a.append(_OUTPUT.put(_clip(str(result)) if result is not None else None))
    return b"".join(a)


def message_field(mid: str) -> bytes:
    """`octel.message.id` of a turn, as its tool calls' spans carry it."""
    return _MESSAGE.s(mid)


def cycle_attributes(
    cycle_id: str,
    driver: str,
    counts: Mapping[str, int | None],
    terminal_state: str | None,
    worker_outcome: str | None,
    error_kind: str | None,
    root: str,
    in_flight: bool,
) -> bytes:
    a = [
        _CYCLE_KIND, _SESSION.v(root), _CYCLE_ID.v(cycle_id), _DRIVER.v(driver),
        _CYCLE_IN_FLIGHT.v(in_flight),
    ]  # fmt: skip
    for name, key in _COUNTS:
        v = counts.get(name)
        if isinstance(v, int):
            a.append(key.v(v))
    a += (_TERMINAL.put(terminal_state), _OUTCOME.put(worker_outcome), _ERROR.put(error_kind))
    return b"".join(a)


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
