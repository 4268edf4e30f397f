"""Claude Code messages (the archive's ``{info, parts}``) -> the detectors' stream (pure).

A tool call's outcome lives in a later user message (``tool_result``, ``is_error``), so results are
looked up by call id first. Tool names are lower-cased to the names the detectors know (``Bash``
is ``bash``, ``Agent``/``Task`` is ``task``). API errors and retries (``system`` lines of subtype
``api_error``, stream-json ``api_retry``) become ``Retry`` parts of a system message; a
``<synthetic>`` API error message is an assistant turn with its error; a ``max_turns_reached``
attachment and the result's ``permission_denials`` are kept as what they are.

The CLI speaks in the conversation too. Its own user messages (``isSynthetic``, e.g. "Output
token limit hit. Resume directly ...") are synthetic text, not a person's new question. An
answer the CLI asked to resume is not marked cut: the CLI is recovering, and a watcher reading
the stream cannot know yet whether it will. The ``max_output_tokens`` API error the CLI ends
with once the resumes are spent is the output limit (finish ``length``), not a provider fault.
A tool the CLI denied (its ``permission_denied`` line, or the result's ``permission_denials``)
is a denied call; only denials of calls not in the messages become permission events, so no
denial is counted twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from archiver.convert import MAX_OUTPUT, MAX_TEXT, Converted, canonical_json
from archiver.shape import as_obj
from detectors.model import Message, Part, PermissionEvent, Reasoning, Retry, Text, ToolCall

__all__ = ["from_claude"]

_TOOL_NAMES = {"agent": "task", "multiedit": "multiedit", "notebookedit": "edit"}
_FINISH = {"end_turn": "stop", "tool_use": "tool-calls", "max_tokens": "length", "stop_sequence": "stop"}
_EXIT = re.compile(r"^Exit code (\d+)")
_INTERRUPTED = ("[Request interrupted by user", "The user doesn't want to proceed")
# A call the person (at the prompt) or the auto-mode classifier refused: a permission denied,
# which permission_deadlock counts when it keeps happening.
_REFUSED = ("The user doesn't want to proceed", "Permission for this action was denied", "Permission to use ")
_OUTPUT_LIMIT = "MessageOutputLengthError"  # OpenCode's name for the same stop


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(as_obj(c).get("text", "")) for c in content if as_obj(c).get("type") == "text")
    return ""


def _results(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[bool, str]]:
    out: dict[str, tuple[bool, str]] = {}
    for m in messages:
        for p in m.get("parts") or []:
            if p.get("type") == "tool_result" and p.get("tool_use_id"):
                out[str(p["tool_use_id"])] = (p.get("is_error") is True, _text(p.get("content")))
    return out


def _call(p: Mapping[str, Any], done: Mapping[str, tuple[bool, str]], denied: frozenset[str]) -> ToolCall:
    call_id = str(p.get("id") or "")
    name = str(p.get("name") or "").lower()
    got = done.get(call_id)
    text = got[1] if got else ""
    code = _EXIT.match(text)
    return ToolCall(
        part_id=call_id,
        tool=_TOOL_NAMES.get(name, name),
        canonical_input=canonical_json(p.get("input", {})),
        status="pending" if got is None else ("error" if got[0] else "completed"),
        output="" if got is None or got[0] else text[:MAX_OUTPUT],
        error=text[:MAX_OUTPUT] if got and got[0] else "",
        exit_code=int(code.group(1)) if code else None,
        call_id=call_id,
        interrupted=any(text.startswith(x) for x in _INTERRUPTED),
        denied=call_id in denied or (got is not None and got[0] and text.startswith(_REFUSED)),
    )


def _parts(
    m: Mapping[str, Any], done: Mapping[str, tuple[bool, str]], denied: frozenset[str], synthetic: bool
) -> list[Part]:
    out: list[Part] = []
    for i, p in enumerate(m.get("parts") or []):
        pid = str(p.get("id") or p.get("uuid") or f"{as_obj(m.get('info')).get('id')}:{i}")
        kind = p.get("type")
        if kind == "text":
            out.append(Text(pid, str(p.get("text") or "")[:MAX_TEXT], synthetic))
        elif kind in ("thinking", "redacted_thinking"):
            out.append(Reasoning(pid, str(p.get("thinking") or p.get("data") or "")[:MAX_TEXT]))
        elif kind == "tool_use":
            out.append(_call(p, done, denied))
    return out


def _system(info: Mapping[str, Any], part: Mapping[str, Any], index: int) -> Message | None:
    sub = as_obj(info.get("claude")).get("subtype")
    mid = str(info.get("id"))
    if sub in ("api_error", "api_retry"):
        attempt = part.get("retryAttempt", part.get("attempt", 0))
        err = as_obj(part.get("error"))
        text = str(err.get("formatted") or err.get("message") or part.get("error") or "")
        n = attempt if isinstance(attempt, int) and not isinstance(attempt, bool) else 0
        return Message(mid, "system", index, (Retry(mid, n, text[:MAX_OUTPUT]),))
    if sub == "max_turns_reached":
        return Message(
            mid, "system", index, (), error="MaxTurnsReached", error_message="maximum turns reached"
        )
    return None


def _denied_ids(
    messages: Sequence[Mapping[str, Any]], results: Iterable[Mapping[str, Any]]
) -> frozenset[str]:
    """Calls the CLI denied: its `permission_denied` lines (stream-json) and the result's list."""
    out = {
        str(as_obj(p).get("tool_use_id"))
        for m in messages
        if as_obj(as_obj(m.get("info")).get("claude")).get("subtype") == "permission_denied"
        for p in m.get("parts") or []
        if as_obj(p).get("tool_use_id")
    }
    out |= {str(as_obj(d).get("tool_use_id")) for r in results for d in r.get("permission_denials") or []}
    return frozenset(out - {"", "None"})


def _denials(results: Iterable[Mapping[str, Any]], shown: set[str]) -> list[PermissionEvent]:
    out: list[PermissionEvent] = []
    for r in results:
        for d in r.get("permission_denials") or []:
            call = str(as_obj(d).get("tool_use_id") or "")
            if call in shown:
                continue  # the denied call is in the messages: counted there
            tool = str(as_obj(d).get("tool_name") or "").lower()
            out.append(PermissionEvent("asked", call, tool, call_id=call))
            out.append(PermissionEvent("replied", call, tool, reply="reject", call_id=call))
    return out


def from_claude(
    messages: Sequence[Mapping[str, Any]], results: Iterable[Mapping[str, Any]] = ()
) -> Converted:
    """The detectors' stream of one Claude session; replayed and unreadable messages are skipped."""
    results = list(results)
    done = _results(messages)
    denied = _denied_ids(messages, results)
    out: list[Message] = []
    for m in messages:
        info = as_obj(m.get("info"))
        if info.get("replayed"):
            continue
        role = info.get("role")
        index = len(out)
        if role == "system":
            parts = m.get("parts") or [{}]
            msg = _system(info, as_obj(parts[0]), index)
            if msg is not None:
                out.append(msg)
            continue
        if role not in ("user", "assistant"):
            continue
        err = as_obj(info.get("error"))
        tokens = as_obj(info.get("tokens"))
        finish = _FINISH.get(str(info.get("finish")), str(info.get("finish"))) if info.get("finish") else None
        name = str(err.get("name")) if err else None
        if err and as_obj(err.get("data")).get("kind") == "max_output_tokens":
            name, finish = _OUTPUT_LIMIT, "length"  # the CLI gave up on answers cut by the limit
        synthetic = role == "user" and as_obj(info.get("claude")).get("isSynthetic") is True
        parts = tuple(_parts(m, done, denied, synthetic))
        out.append(
            Message(
                id=str(info.get("id")),
                role="assistant" if role == "assistant" else "user",
                index=index,
                parts=parts,
                finish=finish,
                error=name,
                error_message=str(as_obj(err.get("data")).get("message") or "")[:MAX_OUTPUT] if err else "",
                output_tokens=int(tokens.get("output") or 0),
                agent=str(info.get("agent") or ""),
            )
        )
    shown = {p.call_id for m in out for p in m.parts if isinstance(p, ToolCall) and p.denied}
    return Converted(out, [], _denials(results, shown))
