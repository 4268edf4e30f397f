"""Claude Code transcript lines -> archive messages ``{info, parts}`` (pure).

Only ``user``, ``assistant``, ``system`` and ``attachment`` lines are conversation; the CLI's
bookkeeping lines (queue operations, request shapes, cost state…) are counted, not kept, and a
type no known version writes is counted under ``unknown_types``. The traps this module exists for:

- the CLI writes one assistant line per content block, each repeating the message's usage: the
  lines of one ``message.id`` become one message whose usage is counted once, and that usage is
  the one of its final line (the line with its stop reason, else the last line that has a usage),
  never a field-by-field mix: a gateway may report the uncached input on the first line and the
  cache read on the last, and in subagent files ``output_tokens`` is a running count;
- ``progress`` lines (``agent_progress``) repeat usage the subagent's own file holds: never counted;
- a ``<synthetic>`` assistant message is an API error when the CLI marks it so (before 2.1 the
  only trace of one), and otherwise a harmless note such as "No response requested.";
- a gateway may hand back OpenAI-style ``tool_calls``: they become ``tool_use`` parts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson

from archiver.claude.prices import Usage, cost_of
from archiver.cut import cut
from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = ["BOOKKEEPING", "CONVERSATION", "Built", "Prior", "build_messages", "iso_ms", "usage_of"]


CONVERSATION = frozenset({"user", "assistant", "system", "attachment"})
BOOKKEEPING = frozenset(
    {
        "queue-operation",
        "api-request-shape",
        "api-request-blob",
        "api-request",
        "last-prompt",
        "atis-latch",
        "tools-used",
        "cost-state",
        "summary",
        "file-history-snapshot",
        "progress",
        "custom-title",
        "tag",
        "agent-name",
        "pr-link",
        "mode",
    }
)
# envelope fields every message line repeats: kept once in ``info.claude``, not per part
_ENVELOPE = ("uuid", "parentUuid", "isSidechain", "agentId", "requestId", "cwd", "gitBranch", "version")


def _n(v: object) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0


def iso_ms(text: object) -> float | None:
    """Milliseconds since the epoch of an ISO timestamp; None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000.0
    except ValueError:
        return None


def usage_of(raw: Mapping[str, Any]) -> Usage:
    """One API usage object; cache writes split 5-minute / 1-hour when the line says so."""
    write = _n(raw.get("cache_creation_input_tokens"))
    split = as_obj(raw.get("cache_creation"))
    hour = _n(split.get("ephemeral_1h_input_tokens"))
    return Usage(
        input=_n(raw.get("input_tokens")),
        output=_n(raw.get("output_tokens")),
        cache_read=_n(raw.get("cache_read_input_tokens")),
        cache_write_5m=max(write - hour, 0),
        cache_write_1h=min(hour, write) if write else hour,
    )


def _tuple(u: Usage) -> tuple[int, int, int, int, int]:
    return (u.input, u.output, u.cache_read, u.cache_write_5m, u.cache_write_1h)


def _content(message: Mapping[str, Any]) -> list[JsonObj]:
    content = message.get("content")
    if isinstance(content, str):
        parts: list[JsonObj] = [{"type": "text", "text": content}] if content else []
    else:
        # anything but a list (a number, an object) holds no block octel can read
        blocks = content if isinstance(content, list) else []
        parts = [dict(c) for c in blocks if isinstance(c, Mapping)]
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:  # an OpenAI-style gateway's answer
        fn = as_obj(as_obj(call).get("function"))
        args = fn.get("arguments")
        try:
            inp = orjson.loads(args) if isinstance(args, str) else args
        except orjson.JSONDecodeError:
            inp = {"arguments": args}
        parts.append({"type": "tool_use", "id": as_obj(call).get("id"), "name": fn.get("name"), "input": inp})
    return parts


@dataclass
class _Turn:
    msg: JsonObj
    usage: Usage
    line_cost: float | None = None
    final: bool = False  # the usage is that of the line with the answer's stop reason


@dataclass
class Built:
    """The messages of one transcript and what was left out of them."""

    messages: list[JsonObj] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    unknown_types: Counter[str] = field(default_factory=Counter)
    unpriced_models: set[str] = field(default_factory=set)
    # each answer's counted usage and line cost, by message id: what a later read of the
    # lines the file gains needs to merge a message split across the two reads (no text)
    usage: dict[str, list[Any]] = field(default_factory=dict)


@dataclass
class Prior:
    """What an earlier read of the start of the same file built: its messages (as archived,
    already redacted) and ``Built.usage``. The lines read now continue it."""

    messages: list[JsonObj]
    usage: dict[str, list[Any]]


def _resume(prior: Prior, turns: dict[str, _Turn], out: Built) -> None:
    for m in prior.messages:
        info = m["info"]
        info.pop("replayed", None)  # decided again over the whole tree
        got = prior.usage.get(str(info.get("id"))) if info.get("role") == "assistant" else None
        if got is not None:
            cost = got[5] if len(got) > 5 and isinstance(got[5], int | float) else None
            final = len(got) > 6 and got[6] is True
            turns[str(info["id"])] = _Turn(m, Usage(*(int(x) for x in got[:5])), cost, final)
        out.messages.append(m)


def _info(line: Mapping[str, Any], session_id: str, role: str, mid: str, ts: float | None) -> JsonObj:
    return {
        "id": mid,
        "role": role,
        "sessionID": session_id,
        "time": {"created": ts, "completed": ts},
        "claude": {k: line.get(k) for k in _ENVELOPE if k in line} | {"type": line.get("type")},
    }


def _synthetic_error(line: Mapping[str, Any], parts: list[JsonObj]) -> JsonObj | None:
    text = " ".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")
    if line.get("isApiErrorMessage") or text.startswith("API Error"):
        return {
            "name": "APIError",
            "data": {
                "message": cut(text, 2000),
                "status": line.get("apiErrorStatus"),
                "kind": line.get("error"),
            },
        }
    return None


def _assistant(line: Mapping[str, Any], session_id: str, turns: dict[str, _Turn], out: Built) -> None:
    message = as_obj(line.get("message"))
    mid = str(message.get("id") or line.get("uuid") or f"line-{len(out.messages)}")
    ts = iso_ms(line.get("timestamp"))
    parts = [p | {"uuid": line.get("uuid")} for p in _content(message)]
    has_usage = isinstance(message.get("usage"), Mapping)
    usage = usage_of(as_obj(message.get("usage")))
    final = bool(message.get("stop_reason")) and has_usage
    line_cost = line.get("costUSD") if isinstance(line.get("costUSD"), int | float) else None
    seen = turns.get(mid)
    if seen is not None:  # another block of the same answer: its usage counted once, the final line's
        seen.msg["parts"].extend(parts)
        if has_usage and (final or not seen.final):
            seen.usage, seen.final = usage, final
        if line_cost is not None:
            seen.line_cost = max(seen.line_cost or 0.0, float(line_cost))
        t = seen.msg["info"]["time"]
        if ts is not None:
            t["completed"] = max(t["completed"] or ts, ts)
        if message.get("stop_reason"):
            seen.msg["info"]["finish"] = message.get("stop_reason")
        return
    info = _info(line, session_id, "assistant", mid, ts)
    model = message.get("model")
    model = model if isinstance(model, str) else None  # a number or a list names no model
    info.update(
        modelID=model,
        providerID="anthropic",
        finish=message.get("stop_reason"),
        error=None,
        synthetic=model == "<synthetic>",
    )
    if model == "<synthetic>" or line.get("isApiErrorMessage"):
        info["error"] = _synthetic_error(line, parts)
    msg: JsonObj = {"info": info, "parts": parts}
    turns[mid] = _Turn(msg, usage, float(line_cost) if line_cost is not None else None, final)
    out.messages.append(msg)


def _finish_turn(turn: _Turn, out: Built) -> None:
    info = turn.msg["info"]
    u = turn.usage
    info["tokens"] = {
        "input": u.input,
        "output": u.output,
        "reasoning": 0,
        "cache": {"read": u.cache_read, "write": u.cache_write},
    }
    info["cache_write_1h"] = u.cache_write_1h
    if turn.line_cost is not None:
        info["cost"], info["cost_source"] = turn.line_cost, "line"
    elif info.get("synthetic") or u.total == 0:
        info["cost"], info["cost_source"] = 0.0, "none"
    else:
        cost = cost_of(info.get("modelID"), u, at_ms=info["time"]["created"])
        if cost is None:
            out.unpriced_models.add(str(info.get("modelID")))
            info["cost"], info["cost_source"] = 0.0, "unpriced"
        else:
            info["cost"], info["cost_source"] = cost, "table"


def _other(line: Mapping[str, Any], session_id: str, kind: str, out: Built) -> None:
    ts = iso_ms(line.get("timestamp"))
    uid = str(line.get("uuid") or f"line-{len(out.messages)}")
    if kind == "user":
        message = as_obj(line.get("message"))
        info = _info(line, session_id, "user", uid, ts)
        for key in ("toolUseResult", "isMeta", "isCompactSummary", "promptId", "isSynthetic"):
            if key in line:
                info["claude"][key] = line[key]
        parts = [p | {"uuid": line.get("uuid")} for p in _content(message)]
        out.messages.append({"info": info, "parts": parts})
        return
    # system and attachment lines: kept whole as the one part of a system message
    info = _info(line, session_id, "system", uid, ts)
    info["claude"]["subtype"] = line.get("subtype") or as_obj(line.get("attachment")).get("type")
    part = {k: v for k, v in line.items() if k not in _ENVELOPE and k not in ("sessionId", "userType")}
    out.messages.append({"info": info, "parts": [part]})


def build_messages(lines: Iterable[Mapping[str, Any]], session_id: str, prior: Prior | None = None) -> Built:
    """The conversation of one session (or subagent) file, in file order; with ``prior``,
    of the lines that follow what an earlier read built (the result holds both)."""
    out = Built()
    turns: dict[str, _Turn] = {}
    if prior is not None:
        _resume(prior, turns, out)
    for line in lines:
        kind = line.get("type")
        if not isinstance(kind, str):  # a list or an object is no type, yet counted
            out.unknown_types[orjson.dumps(kind).decode()[:40]] += 1
        elif kind == "assistant":
            _assistant(line, session_id, turns, out)
        elif kind in CONVERSATION:
            _other(line, session_id, str(kind), out)
        elif kind in BOOKKEEPING:
            out.skipped[str(kind)] += 1
        else:
            out.unknown_types[str(kind)] += 1
    for mid, turn in turns.items():
        _finish_turn(turn, out)
        out.usage[mid] = [*_tuple(turn.usage), turn.line_cost, turn.final]
    return out
