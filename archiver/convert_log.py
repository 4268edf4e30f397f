"""OpenCode event streams -> the message items `archiver.convert` reads (pure).

Two kinds of log hold a session without its message list:
- an event capture (`GET /event`, `/global/event`, a plugin's hook): `message.updated` carries
  each message's info and `message.part.updated` each part, the last update of an id winning;
- `opencode run --format json`: one line per finished part (`step_start`, `text`, `reasoning`,
  `tool_use`, `step_finish`) with its `sessionID` and a `timestamp`, plus `error` lines. Only
  the model's parts are printed, so each message is an assistant step rebuilt from its parts.
  OpenCode 2 prints the same lines (synthesised from its events) with its own tool names
  (`shell`, `subagent`: read as `bash`, `task`); a part that names no message belongs to the
  step its `step_start` opened (or, in a log without `step_start` lines, the step its
  `step_finish` closes). Several runs (or a run and its subagents) may share one log: each
  `sessionID` is a session of its own.
Both become `{info, parts}` items (the classic route's shape), grouped by session.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from archiver.convert_events import as_float as _f
from archiver.convert_events import as_map as _d
from archiver.convert_events import as_str as _s
from archiver.convert_events import unwrap_event
from archiver.convert_v2 import TOOL_NAMES
from archiver.shape import RawJson

__all__ = ["RUN_LOG_TYPES", "SessionLog", "is_event", "sessions_from_events"]

# `opencode run --format json` line types that carry a part.
RUN_LOG_TYPES = frozenset({"step_start", "text", "reasoning", "tool_use", "step_finish"})
_MESSAGE_EVENTS = frozenset(
    {"message.updated", "message.part.updated", "message.removed", "message.part.removed"}
)


def is_event(item: object) -> bool:
    """An OpenCode event, bare or under a common wrapper (not a message, not a status)."""
    ev, _ = unwrap_event(item)
    kind = ev.get("type")
    if not isinstance(kind, str):
        return False
    return "properties" in ev or kind in RUN_LOG_TYPES or (kind == "error" and "sessionID" in ev)


@dataclass
class SessionLog:
    """What the events told about one session."""

    id: str
    parent: str | None = None
    infos: dict[str, RawJson] = field(default_factory=dict)
    parts: dict[str, dict[str, Mapping[str, Any]]] = field(default_factory=dict)
    error: Mapping[str, Any] | None = None  # a run log's `error` line, for its last step

    def items(self) -> list[RawJson]:
        """Messages oldest first (OpenCode ids sort by creation time) as `{info, parts}`."""
        ids = sorted(set(self.infos) | set(self.parts), key=lambda m: (self._created(m), m))
        out: list[RawJson] = []
        for mid in ids:
            info = self.infos.get(mid)
            parts = list(self.parts.get(mid, {}).values())
            if info is None:  # a run log: an assistant step known only by its parts
                info = _step_info(mid, self.id, parts)
            out.append({"info": info, "parts": parts})
        if self.error is not None and out and "error" not in out[-1]["info"]:
            out[-1]["info"] = {**out[-1]["info"], "error": dict(self.error)}
        return out

    def _created(self, mid: str) -> float:
        t = _f(_d(_d(self.infos.get(mid)).get("time")).get("created"))
        return t if t is not None else float("inf")


def _step_info(mid: str, sid: str, parts: list[Mapping[str, Any]]) -> RawJson:
    info: RawJson = {"id": mid, "sessionID": sid, "role": "assistant", "time": {}}
    for p in parts:
        if p.get("type") == "step-finish":
            info["finish"] = _s(p.get("reason")) or None
            info["tokens"] = _d(p.get("tokens"))
            info["time"] = {"completed": 1}
    return info


def sessions_from_events(events: Iterable[object]) -> dict[str, SessionLog]:
    """Every session the events mention with a message, keyed by id, in order of first sight."""
    logs: dict[str, SessionLog] = {}
    parents: dict[str, str | None] = {}
    steps: dict[str, int] = {}  # per session: the step_start lines seen
    finished: dict[str, int] = {}  # per session: the step_finish lines seen

    def log(sid: str) -> SessionLog:
        got = logs.get(sid)
        if got is None:
            got = logs[sid] = SessionLog(sid, parents.get(sid))
        return got

    for raw in events:
        ev, _ = unwrap_event(raw)
        kind = ev.get("type")
        if kind in RUN_LOG_TYPES:
            part = _d(ev.get("part"))
            sid, mid = _s(part.get("sessionID")) or _s(ev.get("sessionID")), _s(part.get("messageID"))
            if kind == "step_start":
                steps[sid] = steps.get(sid, 0) + 1
            if sid and not mid:
                # no message id: the step its step_start opened, or, in a log printing no
                # step_start, the step after the last step_finish
                n = steps[sid] if sid in steps else finished.get(sid, 0) + 1
                mid = f"step_{n:09d}"
            if kind == "step_finish":
                finished[sid] = finished.get(sid, 0) + 1
            tool = part.get("tool")
            if part.get("type") == "tool" and isinstance(tool, str) and tool in TOOL_NAMES:
                part = {**part, "tool": TOOL_NAMES[tool]}
            if sid and mid:
                log(sid).parts.setdefault(mid, {})[_s(part.get("id")) or str(len(log(sid).parts))] = part
            continue
        if kind == "error" and "properties" not in ev:
            sid = _s(ev.get("sessionID"))
            if sid:
                log(sid).error = _d(ev.get("error"))
            continue
        props = _d(ev.get("properties"))
        if kind in ("session.created", "session.updated"):
            info = _d(props.get("info"))
            sid = _s(info.get("id")) or _s(props.get("sessionID"))
            if sid:
                parent = info.get("parentID")
                parents[sid] = parent if isinstance(parent, str) else None
                if sid in logs:
                    logs[sid].parent = parents[sid]
            continue
        if kind not in _MESSAGE_EVENTS:
            continue
        _message_event(kind, props, log)
    return logs


def _message_event(kind: object, props: Mapping[str, Any], log: Any) -> None:
    if kind == "message.updated":
        info = _d(props.get("info"))
        sid, mid = _s(info.get("sessionID")) or _s(props.get("sessionID")), _s(info.get("id"))
        if sid and mid:
            log(sid).infos[mid] = dict(info)
    elif kind == "message.part.updated":
        part = _d(props.get("part"))
        sid, mid, pid = _s(part.get("sessionID")), _s(part.get("messageID")), _s(part.get("id"))
        if sid and mid and pid:
            log(sid).parts.setdefault(mid, {})[pid] = part
    elif kind == "message.removed":
        sid, mid = _s(props.get("sessionID")), _s(props.get("messageID"))
        if sid and mid:
            log(sid).infos.pop(mid, None)
            log(sid).parts.pop(mid, None)
    else:  # message.part.removed
        sid, mid, pid = _s(props.get("sessionID")), _s(props.get("messageID")), _s(props.get("partID"))
        if sid and mid:
            log(sid).parts.get(mid, {}).pop(pid, None)
