"""The fast path of `archiver.convert` for the common case: classic `{info, parts}` items whose
fields have the types OpenCode gives them.

It builds exactly the records the general converter builds, with plain `type(x) is dict`
checks and local lookups instead of the forgiving readers, and with orjson for canonical tool
inputs. On anything unexpected it gives up (returns None) and the caller uses the general
converter, which reads whatever it can: the fast path never decides what a message means.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from archiver.shape import RawJson
from detectors.commands import hit_timeout
from detectors.model import (
    Compaction,
    Message,
    Part,
    Patch,
    Reasoning,
    StepFinish,
    Text,
    ToolCall,
    ToolStatus,
)

__all__ = ["canonical_json", "canonical_json_fast", "classic_messages"]

MAX_OUTPUT = 2000
MAX_TEXT = 8000
_STATUSES: dict[str, ToolStatus] = {
    "pending": "pending",
    "running": "running",
    "completed": "completed",
    "error": "error",
}
_SKIP = frozenset({"step-start", "file", "agent", "subtask", "snapshot"})
_SORT = orjson.OPT_SORT_KEYS


class _Unexpected(Exception):
    """A shape the fast path does not take: the general converter will."""


def canonical_json_fast(value: object) -> str:
    """`archiver.convert.canonical_json` through orjson (sorted keys, no spaces). Text with
    non-ASCII characters goes through the json module, which escapes them, so a call reads the
    same on either path; floats may be spelt differently (`1e20`), which no comparison sees."""
    try:
        out = orjson.dumps(value, option=_SORT)
    except (TypeError, orjson.JSONEncodeError):
        return _slow(value)
    return out.decode() if out.isascii() else _slow(value)


def canonical_json(value: object) -> str:
    """Tool input as JSON with sorted keys, so key order never makes two calls differ."""
    if isinstance(value, str):
        raw = value
        try:
            value = json.loads(raw)  # a pending call carries its input as raw text
        except ValueError:
            return raw
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


_slow = canonical_json


def _str(v: object, cap: int) -> str:
    if type(v) is str:
        return v if len(v) <= cap else v[:cap]
    if v is None:
        return ""
    raise _Unexpected


def _part(p: Any) -> Part | None:
    if type(p) is not dict:
        raise _Unexpected
    kind = p.get("type")
    if kind in _SKIP:
        return None
    pid = p.get("id", "")
    if type(pid) is not str or len(pid) > MAX_TEXT:
        raise _Unexpected
    if kind == "step-finish":
        tokens = p.get("tokens")
        reason = p.get("reason", "")
        if type(tokens) is not dict or type(reason) is not str:
            raise _Unexpected
        out_t, reas_t = tokens.get("output", 0), tokens.get("reasoning", 0)
        if type(out_t) is not int or type(reas_t) is not int:
            raise _Unexpected
        return StepFinish(pid, reason[:MAX_TEXT], out_t, reas_t)
    if kind == "tool":
        return _tool(pid, p)
    if kind == "text":
        return Text(pid, _str(p.get("text"), MAX_TEXT), p.get("synthetic") is True)
    if kind == "reasoning":
        return Reasoning(pid, _str(p.get("text"), MAX_TEXT))
    if kind == "patch":
        files = p.get("files")
        if type(files) is not list or not all(type(f) is str for f in files):
            raise _Unexpected
        return Patch(pid, tuple(files))
    if kind == "compaction":
        return Compaction(pid, p.get("auto") is True, p.get("overflow") is True)
    raise _Unexpected  # retry parts and unknown kinds: the general converter's business


def _tool(pid: str, p: RawJson) -> ToolCall:
    state = p.get("state")
    if type(state) is not dict:
        raise _Unexpected
    status = _STATUSES.get(state.get("status"))  # type: ignore[arg-type]
    meta = state.get("metadata")
    if meta is None:
        meta = {}
    elif type(meta) is not dict:
        raise _Unexpected
    exit_raw = meta.get("exit")
    exit_code = exit_raw if type(exit_raw) is int else None
    err = state.get("error")
    if err is not None and type(err) is not str:
        raise _Unexpected
    raw_out = state.get("output")
    out = _str(raw_out, MAX_TEXT)
    inp = state.get("input", {})
    return ToolCall(
        pid,
        _str(p.get("tool"), MAX_TEXT),
        canonical_json_fast(inp) if type(inp) is dict else _slow(inp),
        status or "error",
        out[:MAX_OUTPUT],
        err[:MAX_OUTPUT] if err else "",
        exit_code,
        _str(p.get("callID"), MAX_TEXT),
        meta.get("interrupted") is True or "User aborted the command" in out,
        exit_code is None and bool(raw_out) and hit_timeout(raw_out[-400:]),  # type: ignore[index]
    )


def _message(item: Any, index: int) -> tuple[Message | None, float | None, str | None]:
    if type(item) is not dict:
        raise _Unexpected
    info, parts = item.get("info"), item.get("parts")
    if type(info) is not dict or type(parts) is not list:
        raise _Unexpected
    role = info.get("role")
    time = info.get("time") or {}
    if type(time) is not dict:
        raise _Unexpected
    created = time.get("created")
    t = created / 1000.0 if isinstance(created, int | float) and type(created) is not bool else None
    sid = info.get("sessionID")
    if role not in ("user", "assistant"):
        return None, t, sid if type(sid) is str else None
    built = [_part(x) for x in parts]
    err = info.get("error")
    tokens = info.get("tokens") or {}
    if (err is not None and type(err) is not dict) or type(tokens) is not dict:
        raise _Unexpected
    err_data = err.get("data") if err else None
    finish = info.get("finish")
    out_t, reas_t = tokens.get("output", 0), tokens.get("reasoning", 0)
    if type(out_t) is not int or type(reas_t) is not int:
        raise _Unexpected
    msg = Message(
        _str(info.get("id"), MAX_TEXT),
        role,
        index,
        tuple(x for x in built if x is not None),
        finish if type(finish) is str else None,
        (_str(err.get("name"), MAX_TEXT) or None) if err else None,
        _str(err_data.get("message"), MAX_OUTPUT) if type(err_data) is dict else "",
        out_t,
        reas_t,
        time.get("completed") is not None or role == "user",
        _str(info.get("agent"), MAX_TEXT) or _str(info.get("mode"), MAX_TEXT),
        info.get("summary") is True,
    )
    return msg, t, sid if type(sid) is str else None


def classic_messages(items: Any) -> tuple[list[Message], list[float | None], str | None] | None:
    """(messages, creation times in s, session id) of a classic message list; None when any
    item is not of the expected shape (the caller then uses the general converter)."""
    if type(items) is not list or not items:
        return None
    out: list[Message] = []
    created: list[float | None] = []
    session: str | None = None
    try:
        for item in items:
            msg, t, sid = _message(item, len(out))
            if msg is not None:
                out.append(msg)
                created.append(t)
                session = session or sid
    except (_Unexpected, TypeError, AttributeError, KeyError, ValueError):
        return None
    return out, created, session
