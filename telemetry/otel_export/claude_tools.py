"""Claude Code tool calls in the shape the mapping reads OpenCode's (pure).

A Claude Code call is a `tool_use` part of an assistant message (`id`, `name`, `input`); its
outcome is a `tool_result` part of a later user message (`tool_use_id`, `is_error`, `content`).
Each call becomes an OpenCode-style tool part (`id`, `callID`, `tool`, `state` with status,
input, output or error, and times), so one mapping serves both sources. A call runs from the
moment its assistant message was written to the moment its result was; a call with no result
yet is `pending` and ends where it starts.

A subagent's archive names the call that launched it (`claude.tool_use_id`, read from the
subagent's meta file `toolUseId` or the result that names its agent), and its span hangs there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = ["SOURCE_KIND", "is_claude", "launching_call", "tool_parts"]

SOURCE_KIND = "claude_code"


def is_claude(doc: Mapping[str, Any]) -> bool:
    return as_obj(doc.get("source")).get("kind") == SOURCE_KIND


def launching_call(doc: Mapping[str, Any]) -> str | None:
    """The tool_use id of the Agent/Task call that launched this subagent, when known."""
    got = as_obj(doc.get("claude")).get("tool_use_id") or as_obj(as_obj(doc.get("session")).get("meta")).get(
        "toolUseId"
    )
    return str(got) if got else None


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(as_obj(c).get("text") or "") for c in content if as_obj(c).get("type") == "text")
    return ""


def _results(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, str, object]]:
    """tool_use id -> (failed, text, when its result was written)."""
    out: dict[str, tuple[bool, str, object]] = {}
    for m in messages:
        parts = m.get("parts") or []
        if not any(as_obj(p).get("type") == "tool_result" for p in parts):
            continue
        when = as_obj(as_obj(m.get("info")).get("time")).get("created")
        for p in parts:
            p = as_obj(p)
            if p.get("type") == "tool_result" and p.get("tool_use_id"):
                out[str(p["tool_use_id"])] = (p.get("is_error") is True, _text(p.get("content")), when)
    return out


def tool_parts(messages: Sequence[Mapping[str, Any]]) -> dict[str, list[JsonObj]]:
    """Assistant message id -> its tool calls as OpenCode-style tool parts."""
    results = _results(messages)
    out: dict[str, list[JsonObj]] = {}
    for m in messages:
        info = as_obj(m.get("info"))
        if info.get("role") != "assistant":
            continue
        t = as_obj(info.get("time"))
        written = t.get("completed") if t.get("completed") is not None else t.get("created")
        calls = []
        for p in m.get("parts") or []:
            p = as_obj(p)
            if p.get("type") != "tool_use" or not p.get("id"):
                continue
            got = results.get(str(p["id"]))
            state: JsonObj = {"input": p.get("input", {}), "time": {"start": written}}
            if got is None:
                state["status"] = "pending"
            else:
                failed, text, when = got
                state["status"] = "error" if failed else "completed"
                state["error" if failed else "output"] = text
                state["time"]["end"] = when
            calls.append(
                {"id": p["id"], "callID": p["id"], "type": "tool", "tool": p.get("name"), "state": state}
            )
        if calls:
            out[str(info.get("id"))] = calls
    return out
