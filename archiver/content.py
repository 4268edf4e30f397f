"""The searchable text of an archive document: one entry per part that says something.

Pure: it reads a (redacted) document in the newest layout and returns plain frozen data, which
the store's content index (`telemetry/services/index/content_index.py`) writes a row each. What is
searchable: message text, reasoning, a tool's name, input, output and error, and a message's
own error, in OpenCode's parts and in Claude Code's (thinking, tool_use, tool_result). Each
entry keeps where it came from (the message's position in the session, which is the turn the
console opens, and the part's position in the message) and when.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from archiver.shape import as_num, as_obj

__all__ = ["MAX_BODY", "ContentPart", "content_parts"]

# A part's text is cut at this many characters: a tool output of megabytes (a log, a file)
# would otherwise cost its size again in the index; the head of it is where the lines are read.
MAX_BODY = 20_000


@dataclass(frozen=True)
class ContentPart:
    message_index: int
    part_index: int
    kind: str  # text, reasoning, tool, error
    tool: str | None
    created_ms: float | None
    body: str


def _text(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    try:
        return orjson.dumps(v).decode()
    except TypeError:
        return str(v)


def _tool_body(part: Mapping[str, Any]) -> str:
    state = as_obj(part.get("state"))
    pieces = [_text(part.get("tool")), _text(state.get("input")), _text(state.get("output"))]
    pieces.append(_text(state.get("error")))
    return "\n".join(p for p in pieces if p)


def _part(
    mi: int, pi: int, part: Mapping[str, Any], at: float | None, tools: dict[str, str]
) -> ContentPart | None:
    """One searchable part, OpenCode's (text, reasoning, tool) or Claude Code's (thinking,
    tool_use, tool_result: the result named by the tool of its call); None for the rest."""
    kind = part.get("type")
    tool: str | None = None
    if kind in ("text", "reasoning"):
        body = _text(part.get("text"))
    elif kind == "thinking":
        kind, body = "reasoning", _text(part.get("thinking"))
    elif kind == "tool":
        body, tool = _tool_body(part), (_text(part.get("tool")) or None)
    elif kind == "tool_use":
        tool = _text(part.get("name")) or None
        tools[_text(part.get("id"))] = tool or ""
        kind, body = "tool", "\n".join(p for p in (tool or "", _text(part.get("input"))) if p)
    elif kind == "tool_result":
        tool = tools.get(_text(part.get("tool_use_id"))) or None
        kind, body = "tool", _text(part.get("content"))
    else:
        return None
    if not body.strip():
        return None
    return ContentPart(mi, pi, str(kind), tool, at, body[:MAX_BODY])


def content_parts(doc: Mapping[str, Any]) -> tuple[ContentPart, ...]:
    """Every searchable part of the document, in order. A message's error is a part of its own
    (part index -1), as the console shows it beside the message."""
    out: list[ContentPart] = []
    tools: dict[str, str] = {}  # Claude Code: a tool call's id -> its tool, for its result
    messages = doc.get("messages")
    for mi, m in enumerate(messages if isinstance(messages, list) else []):
        info = as_obj(as_obj(m).get("info"))
        at = as_num(as_obj(info.get("time")).get("created"))
        parts = as_obj(m).get("parts")
        for pi, p in enumerate(parts if isinstance(parts, list) else []):
            got = _part(mi, pi, as_obj(p), at, tools)
            if got is not None:
                out.append(got)
        err = info.get("error")
        if err:
            out.append(ContentPart(mi, -1, "error", None, at, _text(err)[:MAX_BODY]))
    return tuple(out)
