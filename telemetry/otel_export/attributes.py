"""The attributes and events of each kind of span (pure; conventions.py documents every key).

Attributes are written as encoded Span fields (`fields.Key`), in the order a span carries them,
straight from the archive's fields: the parts every span of a session shares (`session_heads`)
once per session, a turn's token counts encoded once per value. Events stay records (a finding
is rare). Content (prompts, outputs, tool arguments and results) is added only when asked for,
and is the archive's text: redacted before it was stored, so nothing here redacts again.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

from archiver.metrics import TOKEN_KINDS
from archiver.shape import as_obj
from telemetry.otel_export.claude_tools import is_claude
from telemetry.otel_export.fields import Key, KeyGroup
from telemetry.otel_export.wire import varint

__all__ = ["agent_attributes", "chat_attributes", "message_fields", "session_heads", "tool_attributes"]

_KEPT_TAILS = 1024
_CONTENT_LIMIT = 32_000  # characters per attribute: backends refuse or cut larger values anyway

_OP, _KIND = Key("gen_ai.operation.name"), Key("openinference.span.kind")
_CONV, _SESSION, _SID = Key("gen_ai.conversation.id"), Key("session.id"), Key("octel.session.id")
_MESSAGE = Key("octel.message.id")
_TOKENS = tuple(Key(f"octel.tokens.{k}") for k in TOKEN_KINDS)
_TOKEN_KEYS = tuple(zip(TOKEN_KINDS, _TOKENS, strict=True))
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
    Key(k)
    for k in (
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.reasoning.output_tokens",
        "llm.token_count.prompt",
        "llm.token_count.completion",
        "llm.token_count.total",
    )
)
_LLM_CACHE_READ = Key("llm.token_count.prompt_details.cache_read")
_LLM_CACHE_WRITE = Key("llm.token_count.prompt_details.cache_write")
_LLM_REASONING = Key("llm.token_count.completion_details.reasoning")
_IN_FLIGHT = Key("octel.turn.in_flight")
_FLIGHT_TRUE, _FLIGHT_FALSE = _IN_FLIGHT.b(True), _IN_FLIGHT.b(False)
_COST_HEAD = _COST.double_head
_D = struct.Struct("<d").pack
_SMALL = [bytes([n]) for n in range(128)]
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
_TOOL_FIELDS = KeyGroup(_TOOL, _TOOL_NAME)
_TOOL_ERROR = _ERROR.s("tool_error")
_ARGUMENTS, _RESULT = Key("gen_ai.tool.call.arguments"), Key("gen_ai.tool.call.result")


def _first_assistant(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    for m in doc.get("messages") or []:
        info = (m if type(m) is dict else as_obj(m)).get("info")
        if type(info) is not dict:
            info = as_obj(info)
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
    tot = as_obj(doc.get("totals"))
    tokens = as_obj(tot.get("tokens"))
    sid = str(doc["session_id"])
    a = [
        _AGENT_OP,
        _AGENT.kept(agent),
        _AGENT_ID.s(sid),
        _CONV.s(root),
        _SESSION.s(root),
        _SID.s(sid),
        _DEPTH.i(int(doc.get("depth") or 0)),
        _COST.f(float(tot.get("cost") or 0.0)),
        _PROVIDER.put(provider, keep=True),
        _PARENT.put(doc.get("parent_session_id")),
        _TITLE.put(doc.get("title")),
        _LABEL.put(doc.get("label"), keep=True),
        _VERDICT.put(doc.get("verdict"), keep=True),
    ]
    get = tokens.get
    for k, key in _TOKEN_KEYS:
        a.append(key.i(int(get(k) or 0)))
    return agent, b"".join(a)


def session_heads(root: str, sid: str) -> tuple[bytes, bytes]:
    """The attributes every chat and every execute_tool span of a session starts with."""
    common = _CONV.s(root) + _SESSION.s(root) + _SID.s(sid)
    return _CHAT_OP + common, _TOOL_OP + common


def _text(parts: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(str(p.get("text") or "") for p in parts if p.get("type") == "text" and p.get("text"))


def _clip(text: str) -> str:
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "…"


class _TextPart(TypedDict):
    type: str
    content: str


class _Message(TypedDict):  # a message of text in `gen_ai.*.messages`, as the conventions write it
    role: str
    parts: list[_TextPart]
    finish_reason: NotRequired[str]


def _messages(role: str, text: str, finish: object = None) -> str:
    msg: _Message = {"role": role, "parts": [{"type": "text", "content": _clip(text)}]}
    if finish:
        msg["finish_reason"] = str(finish)
    return json.dumps([msg], ensure_ascii=False)


def message_fields(mid: str) -> tuple[bytes, bytes]:
    """(`octel.message.id`, `gen_ai.response.id`) of a turn, the id encoded once: the turn's span
    carries both, its tool calls' spans the first."""
    raw = mid.encode()
    return _MESSAGE.utf8(raw), _RESPONSE_ID.utf8(raw)


def chat_attributes(
    head: bytes,
    message_id: bytes,
    response_id: bytes,
    turn: Mapping[str, Any],
    parts: Sequence[Mapping[str, Any]],
    prompt: Mapping[str, Any] | None,
    content: bool,
) -> bytes:
    """A turn's chat span attributes; ``head`` is the session's (`session_heads`), ``message_id``
    and ``response_id`` the message's `message_fields`."""
    tokens = turn.get("tokens")
    get = (tokens if type(tokens) is dict else as_obj(tokens)).get
    # the order TOKEN_KINDS names them: input, output, reasoning, cache_read, cache_write
    i, o, r = int(get("input") or 0), int(get("output") or 0), int(get("reasoning") or 0)
    cr, cw = int(get("cache_read") or 0), int(get("cache_write") or 0)
    p = i + cr + cw
    c = o + r
    cost = _COST_HEAD + _D(float(turn.get("cost") or 0.0))
    flight = _FLIGHT_TRUE if turn.get("in_flight") else _FLIGHT_FALSE
    if i >= 0 and o >= 0 and r >= 0 and cr >= 0 and cw >= 0 and p + c < _INT64:
        # each count's varint once (p, c, cr, cw and r go to two or three keys), then each field
        # is its key's fixed bytes for that length and the varint; a count below 128 (zeros, most
        # reasoning and cache counts) is its own byte, without a call
        v, small = varint, _SMALL
        vi = small[i] if i < 128 else v(i)
        vo = small[o] if o < 128 else v(o)
        vr = small[r] if r < 128 else v(r)
        vcr = small[cr] if cr < 128 else v(cr)
        vcw = small[cw] if cw < 128 else v(cw)
        vp, vc, vt = v(p), v(c), v(p + c)
        li, lo, lr, lcr, lcw, lp, lc = len(vi), len(vo), len(vr), len(vcr), len(vcw), len(vp), len(vc)
        a = [
            head,
            message_id,
            response_id,
            _H_IN[lp],
            vp,
            _H_OUT[lc],
            vc,
            _H_CACHE_READ[lcr],
            vcr,
            _H_CACHE_WRITE[lcw],
            vcw,
            _H_REASONING[lr],
            vr,
            _H_PROMPT[lp],
            vp,
            _H_COMPLETION[lc],
            vc,
            _H_TOTAL[len(vt)],
            vt,
            _H_LLM_CACHE_READ[lcr],
            vcr,
            _H_LLM_CACHE_WRITE[lcw],
            vcw,
            _H_LLM_REASONING[lr],
            vr,
            cost,
            flight,
            _H_T0[li],
            vi,
            _H_T1[lo],
            vo,
            _H_T2[lr],
            vr,
            _H_T3[lcr],
            vcr,
            _H_T4[lcw],
            vcw,
        ]
    else:  # a negative or huge count (a damaged document): as int64 does, field by field
        a = [
            head,
            message_id,
            response_id,
            _IN.i(p),
            _OUT.i(c),
            _CACHE_READ.i(cr),
            _CACHE_WRITE.i(cw),
            _REASONING.i(r),
            _PROMPT.i(p),
            _COMPLETION.i(c),
            _TOTAL.i(p + c),
            _LLM_CACHE_READ.i(cr),
            _LLM_CACHE_WRITE.i(cw),
            _LLM_REASONING.i(r),
            cost,
            flight,
            _TOKENS[0].i(i),
            _TOKENS[1].i(o),
            _TOKENS[2].i(r),
            _TOKENS[3].i(cr),
            _TOKENS[4].i(cw),
        ]
    finish = turn.get("finish")
    a.append(_chat_tail(turn.get("model"), turn.get("provider"), finish, turn.get("error")))
    if content:
        if prompt is not None:
            asked = _text([p for p in prompt.get("parts") or [] if isinstance(p, Mapping)])
            a.append(_INPUT_MESSAGES.put(_messages("user", asked) if asked else None))
            a.append(_INPUT.put(_clip(asked)))
        said = _text([p for p in parts if isinstance(p, Mapping)])
        a.append(_OUTPUT_MESSAGES.put(_messages("assistant", said, finish) if said else None))
        a.append(_OUTPUT.put(_clip(said)))
    return b"".join(a)


_TAILS: dict[tuple[object, ...], bytes] = {}  # (model, provider, finish, error) of turns: they repeat


def _chat_tail(model: object, provider: object, finish: object, error: object) -> bytes:
    """The model, provider, finish reason and error fields of a turn; the fields of strings (or
    nothing) that repeat are kept, at most _KEPT_TAILS of them (shared by every thread: a race
    can only write a tail twice)."""
    key = (model, provider, finish, error)
    plain = all(v is None or type(v) is str for v in key)  # only these are kept
    got = _TAILS.get(key) if plain else None
    if got is not None:
        return got
    a = []
    if model is not None:
        a.append(_MODEL_FIELDS.put(model))
    if provider is not None:
        a.append(_PROVIDER_FIELDS.put(provider))
    if finish:
        a.append(_FINISH.one_string_list(str(finish)))
    a.append(_ERROR.put(error, keep=True))
    got = b"".join(a)
    if plain and len(_TAILS) < _KEPT_TAILS:
        _TAILS[key] = got
    return got


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
        head,
        message_id,
        _TOOL_FIELDS.put(tool),
        _CALL.put(call),
        _PART.put(part_id),
        _STATUS.put(status, keep=True),
    ]
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
