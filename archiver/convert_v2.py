"""OpenCode 2 messages (typed, with ``content[]``) -> the detector model and the metrics view (pure).

The one place that knows V2's message shapes. ``message`` gives the detectors' ``Message``:
tool names in the detectors' vocabulary (V2's ``shell`` is ``bash``, ``subagent`` is
``task``), stored retries as ``Retry`` parts, compactions, stored shell commands as tool calls,
and the execution's outcome (the ``idle`` message) pinned on the step it ended: a failed
execution's error, an interrupt as an abort. ``metrics_view`` gives each message the
``{info, parts}`` shape the per-turn metrics read (``archiver.metrics``), so every step keeps
its own tokens and cost and a session's cost excludes its children, as for 1.x.
Also reads the 1.18 ``/api`` preview's messages, which share most of the shapes.
Unknown message and content types are skipped here and kept in the archive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from archiver.convert_events import MAX_OUTPUT, MAX_TEXT
from archiver.convert_events import as_int as _i
from archiver.convert_events import as_list as _l
from archiver.convert_events import as_map as _d
from archiver.convert_events import as_str as _s
from archiver.convert_fast import canonical_json
from archiver.shape import RawJson as JsonObj
from detectors.commands import hit_timeout
from detectors.model import (
    Compaction,
    Message,
    Part,
    Patch,
    Reasoning,
    Retry,
    Role,
    Text,
    ToolCall,
    ToolStatus,
)

__all__ = [
    "TOOL_NAMES",
    "execution",
    "is_v2_message",
    "message",
    "metrics_view",
    "oldest_first",
    "pin_outcome",
    "tool_call",
]


# V2's tool names in the detectors' vocabulary (which is 1.x's)
TOOL_NAMES = {"shell": "bash", "subagent": "task"}
_TOOL_STATUSES: dict[object, ToolStatus] = {
    "pending": "pending",
    "streaming": "pending",
    "running": "running",
    "completed": "completed",
    "error": "error",
}


def is_v2_message(item: object) -> bool:
    return isinstance(item, Mapping) and "info" not in item and isinstance(item.get("type"), str)


def oldest_first(items: Sequence[Any]) -> Sequence[Any]:
    """OpenCode 2 messages in creation order (a page read with the default order is newest
    first); anything else, or a list already in order, as it is."""
    if not items or not all(is_v2_message(x) for x in items):
        return items
    created = [_d(_d(x).get("time")).get("created") for x in items]
    if not all(isinstance(t, int | float) and not isinstance(t, bool) for t in created):
        return items
    return sorted(items, key=lambda x: (x["time"]["created"], _s(x.get("id"))))


def tool_call(pid: str, tool: str, state: Mapping[str, Any], call_id: str, text_out: str) -> ToolCall:
    """One tool call of either generation (``state`` holds status, input, metadata, error)."""
    status = state.get("status")
    meta = _d(state.get("metadata")) or _d(state.get("structured"))
    exit_raw = meta.get("exit")
    exit_code = exit_raw if isinstance(exit_raw, int) and not isinstance(exit_raw, bool) else None
    err = state.get("error")
    error = _s(err, MAX_OUTPUT) or _s(_d(err).get("message"), MAX_OUTPUT)
    interrupted = meta.get("interrupted") is True or "User aborted the command" in text_out
    # the timeout note is appended after the output, so look at the end of the whole output
    raw_out = state.get("output")
    tail = raw_out[-400:] if isinstance(raw_out, str) else text_out[-400:]
    return ToolCall(
        part_id=pid,
        tool=tool,
        canonical_input=canonical_json(state.get("input", {})),
        status=_TOOL_STATUSES.get(status, "error") if isinstance(status, str) else "error",
        output=text_out[:MAX_OUTPUT],
        error=error,
        exit_code=exit_code,
        call_id=call_id,
        interrupted=interrupted,
        timed_out=meta.get("status") == "timeout" or (exit_code is None and hit_timeout(tail)),
    )


def _text_of(content: object) -> str:
    return "".join(_s(_d(x).get("text")) for x in _l(content))


def _content(c: Mapping[str, Any]) -> Part | None:
    pid = _s(c.get("id"))
    kind = c.get("type")
    if kind == "text":
        return Text(pid, _s(c.get("text")))
    if kind == "reasoning":
        return Reasoning(pid, _s(c.get("text")))
    if kind == "tool":
        state = _d(c.get("state"))
        name = _s(c.get("name"))
        return tool_call(
            pid, TOOL_NAMES.get(name, name), state, pid, _text_of(state.get("content"))[:MAX_TEXT]
        )
    return None


def _error(err: Mapping[str, Any]) -> tuple[str | None, str]:
    return (_s(err.get("name")) or _s(err.get("type"))) or None, _s(err.get("message"), MAX_OUTPUT)


def _assistant(item: Mapping[str, Any], mid: str, index: int) -> Message:
    tokens = _d(item.get("tokens"))
    parts: list[Part | None] = [_content(_d(c)) for c in _l(item.get("content"))]
    retry = _d(item.get("retry"))
    if retry:
        parts.append(Retry(mid + ":retry", _i(retry.get("attempt")), _error(_d(retry.get("error")))[1]))
    files = tuple(f for f in _l(_d(item.get("snapshot")).get("files")) if isinstance(f, str))
    if files:
        parts.append(Patch(mid + ":snapshot", files))
    finish = item.get("finish")
    name, text = _error(_d(item.get("error")))
    return Message(
        id=mid,
        role="assistant",
        index=index,
        parts=tuple(p for p in parts if p is not None),
        finish=finish if isinstance(finish, str) else None,
        error=name,
        error_message=text,
        output_tokens=_i(tokens.get("output")),
        reasoning_tokens=_i(tokens.get("reasoning")),
        completed=_d(item.get("time")).get("completed") is not None,
        agent=_s(item.get("agent")),
    )


def _shell(item: Mapping[str, Any], mid: str) -> ToolCall:
    out = item.get("output")
    text = _s(out) if isinstance(out, str) else _s(_d(out).get("output"), MAX_TEXT)
    status = _s(item.get("status"))
    state = {
        "status": "running" if status == "running" else "completed" if status in ("exited", "") else "error",
        "input": {"command": item.get("command")},
        "metadata": {"exit": item.get("exit"), "status": status},
    }
    return tool_call(mid + ":shell", "bash", state, _s(item.get("callID")) or _s(item.get("shellID")), text)


def message(item: Mapping[str, Any], index: int) -> Message | None:
    """One V2 message at stream position ``index`` (None: a kind no detector reads)."""
    kind = item.get("type")
    mid = _s(item.get("id"))
    role: Role
    if kind == "assistant":
        return _assistant(item, mid, index)
    if kind in ("user", "synthetic", "system"):
        role = "system" if kind == "system" else "user"
        parts: list[Part] = [Text(mid + ":text", _s(item.get("text")), kind == "synthetic")]
    elif kind == "shell":
        role, parts = "user", [_shell(item, mid)]
    elif kind == "compaction":
        role, parts = "user", [Compaction(mid + ":compaction", item.get("reason") == "auto")]
    else:
        return None  # idle (see pin_outcome), agent/model/location switches, skills, unknown kinds
    return Message(id=mid, role=role, index=index, parts=tuple(parts))


def execution(messages: Sequence[object], session: Mapping[str, Any] | None = None) -> JsonObj | None:
    """The last execution's outcome: ``{outcome, error, message_id}`` from the newest ``idle``
    message, else from the session record's ``outcome``; None while none has ended."""
    for raw in reversed(messages):
        item = _d(raw)
        if item.get("type") == "idle" and isinstance(item.get("outcome"), str):
            err = item.get("error")
            return {
                "outcome": item["outcome"],
                "error": err if isinstance(err, dict) else None,
                "message_id": item.get("id"),
            }
    outcome = _d(session).get("outcome")
    return {"outcome": outcome, "error": None, "message_id": None} if isinstance(outcome, str) else None


def pin_outcome(out: list[Message], messages: Sequence[object]) -> list[Message]:
    """Each failed or interrupted execution's end on the last step before its ``idle`` message,
    as 1.x stored it on the step itself (an abort is ``MessageAbortedError``)."""
    last: int | None = None
    by_id = {m.id: k for k, m in enumerate(out)}
    for raw in messages:
        item = _d(raw)
        k = by_id.get(_s(item.get("id")))
        if k is not None and out[k].role == "assistant":
            last = k
        if item.get("type") != "idle" or last is None or out[last].error is not None:
            continue
        outcome = item.get("outcome")
        if outcome == "interrupted":
            out[last] = replace(out[last], error="MessageAbortedError", error_message="Step interrupted")
        elif outcome == "failed":
            name, text = _error(_d(item.get("error")))
            out[last] = replace(out[last], error=name or "ExecutionFailed", error_message=text)
    return out


def metrics_view(messages: Sequence[object]) -> list[JsonObj]:
    """Each V2 message as ``{info, parts}`` for ``archiver.metrics``: a step (an assistant
    message, or a compaction that spent tokens) is a turn with its own tokens and cost."""
    out: list[JsonObj] = []
    for raw in messages:
        item = _d(raw)
        kind = _s(item.get("type"))
        model = _d(item.get("model"))
        spent = kind == "compaction" and ("cost" in item or "tokens" in item)
        role = (
            "assistant" if kind == "assistant" or spent else "user" if kind in ("user", "synthetic") else kind
        )
        err = _d(item.get("error"))
        time = _d(item.get("time"))
        if spent and "completed" not in time and item.get("status") in ("completed", "failed"):
            time = {**time, "completed": time.get("created")}  # a compaction stores one time
        info: JsonObj = {
            "id": item.get("id"),
            "role": role,
            "time": time,
            "tokens": _d(item.get("tokens")),
            "cost": item.get("cost"),
            "agent": item.get("agent"),
            "modelID": model.get("id"),
            "providerID": model.get("providerID"),
            "finish": item.get("finish"),
            "summary": spent,
        }
        if err:
            name = _s(err.get("type")) or _s(err.get("name"))
            info["error"] = {"name": name, "data": {"message": err.get("message")}}
        parts = [_classic_part(_d(c)) for c in _l(item.get("content"))]
        if kind in ("user", "synthetic") and isinstance(item.get("text"), str):
            parts.append({"type": "text", "text": item["text"], "synthetic": kind == "synthetic"})
        out.append({"info": info, "parts": [p for p in parts if p is not None]})
    return out


def _classic_part(c: Mapping[str, Any]) -> JsonObj | None:
    """A content item as the 1.x part the trace export reads (tools, texts)."""
    kind = c.get("type")
    if kind in ("text", "reasoning"):
        return {"type": kind, "text": _s(c.get("text"))}
    if kind != "tool":
        return None
    state = _d(c.get("state"))
    meta = dict(_d(state.get("metadata")))
    if "sessionID" in meta:  # the subagent's child, spelled as 1.x's task tool did
        meta.setdefault("sessionId", meta["sessionID"])
    time = _d(c.get("time"))
    err = state.get("error")
    name = _s(c.get("name"))
    return {
        "type": "tool",
        "id": c.get("id"),
        "callID": c.get("id"),
        "tool": TOOL_NAMES.get(name, name),
        "state": {
            "status": _s(state.get("status")),
            "input": state.get("input"),
            "output": _text_of(state.get("content")),
            "metadata": meta,
            "error": _s(err) or _s(_d(err).get("message")) or None,
            "time": {"start": time.get("ran", time.get("created")), "end": time.get("completed")},
        },
    }
