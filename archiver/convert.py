"""OpenCode JSON -> the detectors' normalised stream (pure: dicts in, frozen records out).

Reads both API generations: the classic `GET /session/{id}/message` items (`{info, parts}`) and
the `/api/session/{id}/message` items (`{type, content, ...}`, also inside a `{data: [...]}`
envelope). Anything that cannot be read is skipped, never raised: a recorder must survive a
server that changes shape under it. Long strings are cut (outputs and errors to `MAX_OUTPUT`,
texts to `MAX_TEXT`): the detectors compare heads. Events: `archiver.convert_events`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from archiver.convert_events import (
    MAX_OUTPUT,
    MAX_TEXT,
    merged_status,
    overflow_errors,
    permissions_from_opencode,
    status_from_events,
    status_from_opencode,
)
from archiver.convert_events import READ_ERRORS as _READ_ERRORS
from archiver.convert_events import as_float as _f
from archiver.convert_events import as_int as _i
from archiver.convert_events import as_list as _l
from archiver.convert_events import as_map as _d
from archiver.convert_events import as_str as _s
from archiver.convert_fast import canonical_json, classic_messages
from archiver.convert_v2 import message as v2_message
from archiver.convert_v2 import oldest_first, pin_outcome, tool_call
from detectors.model import (
    Compaction,
    Message,
    Part,
    Patch,
    PermissionEvent,
    Reasoning,
    Retry,
    StatusSample,
    StepFinish,
    Text,
    ToolCall,
)

__all__ = [
    "MAX_OUTPUT",
    "MAX_TEXT",
    "Converted",
    "canonical_json",
    "from_fixture",
    "from_opencode",
    "message_from_opencode",
    "permissions_from_opencode",
    "status_from_events",
    "status_from_opencode",
]


class Converted(NamedTuple):
    messages: list[Message]
    status: list[StatusSample]
    permissions: list[PermissionEvent]


def _classic_part(p: Mapping[str, Any]) -> Part | None:
    pid = _s(p.get("id"))
    kind = p.get("type")
    if kind == "text":
        return Text(pid, _s(p.get("text")), p.get("synthetic") is True)
    if kind == "reasoning":
        return Reasoning(pid, _s(p.get("text")))
    if kind == "tool":
        state = _d(p.get("state"))
        out = _s(state.get("output"), MAX_TEXT)
        return tool_call(pid, _s(p.get("tool")), state, _s(p.get("callID")), out)
    if kind == "step-finish":
        tokens = _d(p.get("tokens"))
        out_t, reas_t = _i(tokens.get("output")), _i(tokens.get("reasoning"))
        return StepFinish(pid, _s(p.get("reason")), out_t, reas_t)
    if kind == "retry":
        err = _d(p.get("error"))
        msg = _s(_d(err.get("data")).get("message"), MAX_OUTPUT) or _s(err.get("message"))
        return Retry(pid, _i(p.get("attempt")), msg)
    if kind == "compaction":
        return Compaction(pid, p.get("auto") is True, p.get("overflow") is True)
    if kind == "patch":
        return Patch(pid, tuple(f for f in _l(p.get("files")) if isinstance(f, str)))
    return None  # step-start, file, agent, subtask, snapshot: nothing a detector reads


def _classic(item: Mapping[str, Any], index: int) -> Message | None:
    info = _d(item.get("info"))
    role = info.get("role")
    if role not in ("user", "assistant"):
        return None
    parts = [_classic_part(_d(p)) for p in _l(item.get("parts"))]
    err = _d(info.get("error"))
    tokens = _d(info.get("tokens"))
    finish = info.get("finish")
    return Message(
        id=_s(info.get("id")),
        role=role,
        index=index,
        parts=tuple(p for p in parts if p is not None),
        finish=finish if isinstance(finish, str) else None,
        error=_s(err.get("name")) or None,
        error_message=_s(_d(err.get("data")).get("message"), MAX_OUTPUT),
        output_tokens=_i(tokens.get("output")),
        reasoning_tokens=_i(tokens.get("reasoning")),
        completed=_d(info.get("time")).get("completed") is not None or role == "user",
        agent=_s(info.get("agent")) or _s(info.get("mode")),
        summary=info.get("summary") is True,
    )


def _items(messages: object) -> Sequence[Any]:
    items = _l(messages.get("data")) if isinstance(messages, Mapping) else _l(messages)
    # an OpenCode 2 page comes newest first unless asked otherwise: read it oldest first
    return oldest_first(items)


def _attach_overflows(
    out: list[Message], created: list[float | None], events: Iterable[object], sid: str | None
) -> None:
    """ContextOverflowError is only an event; pin it on the empty step it ended."""
    for t, text in overflow_errors(events, sid):
        for k in range(len(out) - 1, -1, -1):
            c, m = created[k], out[k]
            if c is not None and c <= t and m.role == "assistant":
                if m.error is None and not any(isinstance(p, Text | ToolCall) for p in m.parts):
                    out[k] = replace(m, error="ContextOverflowError", error_message=text)
                break


def message_from_opencode(item: object, index: int) -> Message | None:
    """One message (either API generation) at stream position `index`; None if unreadable.

    For a live probe: convert each message as it completes and feed it."""
    d = _d(item)
    try:
        return _classic(d, index) if "info" in d else v2_message(d, index)
    except _READ_ERRORS:
        return None


def from_opencode(
    messages: object,
    *,
    status_samples: Iterable[object] = (),
    events: Iterable[object] = (),
    session_id: str | None = None,
    fast: bool = True,
) -> list[Message]:
    """Messages of one session, oldest first, in the normalised model.

    `fast=False` skips the fast path (`archiver.convert_fast`), for comparing the two.
    `events` (the SSE stream as recorded) supplies what the stored messages lack: a context
    overflow is only an event, so it is pinned on the empty step it ended. Status samples and
    permissions have their own converters; `status_samples` is accepted for symmetry.
    """
    del status_samples
    quick = classic_messages(messages) if fast else None
    if quick is not None:  # the common shape, read without the forgiving readers
        out, created, sid = quick
        _attach_overflows(out, created, events, session_id or sid)
        return out
    out = []
    created = []
    for raw in _items(messages):
        item = _d(raw)
        try:
            if "info" in item:
                msg = _classic(item, len(out))
                t = _f(_d(_d(item.get("info")).get("time")).get("created"))
            else:
                msg = v2_message(item, len(out))
                t = _f(_d(item.get("time")).get("created"))
        except _READ_ERRORS:
            continue
        if msg is not None:
            out.append(msg)
            created.append(t / 1000.0 if t is not None else None)
            if session_id is None and "info" in item:
                sid = _d(item.get("info")).get("sessionID")
                session_id = sid if isinstance(sid, str) else None
    _attach_overflows(out, created, events, session_id)
    return pin_outcome(out, _items(messages))


def from_fixture(doc: object, session_id: str | None = None, *, fast: bool = True) -> Converted:
    """A recorded run (`{messages: {sid: [...]}, status_samples, events, root_id}`) or a bare
    message list, converted for one session (the root unless `session_id` names another); the
    root gets its subagents' asks too (its messages show only the `task` call they hold up)."""
    if not isinstance(doc, Mapping):
        return Converted(from_opencode(doc, fast=fast), [], [])
    msgs_by_session = _d(doc.get("messages"))
    sid = session_id or _s(doc.get("root_id")) or next(iter(msgs_by_session), None)
    if not isinstance(sid, str) or not sid:
        return Converted(from_opencode(doc.get("messages", doc), fast=fast), [], [])
    events = _l(doc.get("events"))
    tree = list(msgs_by_session) if sid == doc.get("root_id") else [sid]
    asks = [p for s in tree for p in permissions_from_opencode(events, session_id=s)]
    return Converted(
        from_opencode(msgs_by_session.get(sid), events=events, session_id=sid, fast=fast),
        merged_status(_l(doc.get("status_samples")), events, sid),
        sorted(asks, key=lambda p: p.t if p.t is not None else 0.0),
    )
