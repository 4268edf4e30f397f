"""The 1.x shapes the tower folds back to OpenCode 2's own (pure), so a tree rescued from the
watcher's mirror of a 2.x server is archived as V2 served it (schema v4), not as 1.x parts.

``tower.messages_v2.v1_message`` maps a V2 message to ``{info, parts}`` and, through
``keep_extras`` here, keeps on ``info["v2"]`` and each ``part["v2"]`` whatever of the V2
message the 1.x shape cannot say (its type, a shell's command and output, a tool's typed
error, unknown keys and content kinds; ``v2drop``: what reading back would add); ``v2_message``
reads both back, so
``v2_message(v1_message(m)) == m`` for every message 1.x has a shape for. ``v2_session`` undoes
``v1_session`` (the ``directory`` it added from ``location``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from archiver.shape import RawJson, as_obj, as_text

__all__ = ["DROP", "EXTRA", "IDLE", "idle_info", "keep_extras", "v2_message", "v2_session"]

EXTRA = "v2"  # where a 1.x info or part keeps what of its V2 original it cannot say
DROP = "v2drop"  # and the keys reading it back adds that the original did not have
# the tower's own event for V2's idle marker (an execution's outcome): only the mirror keeps it,
# as an info of role "idle" that no 1.x reader takes for a message it knows
IDLE = "session.v2.idle"
_STATUS = {"pending": "streaming", "running": "running", "completed": "completed", "error": "error"}


def _same(a: object, b: object) -> bool:
    # as JSON: 3 and 3.0 differ, key order does not
    try:
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(b, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return False


def _extras(orig: Mapping[str, Any], back: Mapping[str, Any]) -> tuple[RawJson, list[str]]:
    keep = {k: v for k, v in orig.items() if k not in back or not _same(back[k], v)}
    return keep, [k for k in back if k not in orig]


def _aside(obj: RawJson, keep: RawJson, drop: list[str]) -> None:
    if keep:
        obj[EXTRA] = keep
    if drop:
        obj[DROP] = drop


def _apply(back: RawJson, obj: Mapping[str, Any]) -> RawJson:
    out = {**back, **as_obj(obj.get(EXTRA))}
    for k in obj.get(DROP) or ():
        out.pop(k, None)
    return out


def _item(part: Mapping[str, Any]) -> RawJson:
    """One 1.x part as the V2 content item it came from, before its extras."""
    kind = as_text(part.get("type"))
    if kind != "tool":
        return {"type": kind, "text": part.get("text")}
    st = as_obj(part.get("state"))
    t = as_obj(st.get("time"))
    state: RawJson = {"status": _STATUS.get(as_text(st.get("status")), "running"), "input": st.get("input")}
    if "metadata" in st:
        state["metadata"] = st["metadata"]
    if state["status"] == "completed":
        state["content"] = [{"type": "text", "text": st.get("output")}]
    elif state["status"] == "error":
        state["error"] = {"message": st.get("error")}
    time = {"created": t.get("start"), **({"completed": t["end"]} if "end" in t else {})}
    return {"type": "tool", "id": part.get("callID"), "name": part.get("tool"), "state": state, "time": time}


def _guess(info: Mapping[str, Any]) -> str:
    """The V2 type a 1.x info reads as when its extras do not name one."""
    if info.get("role") != "assistant":
        return "user"
    return "compaction" if info.get("summary") else "assistant"


def _message(info: Mapping[str, Any], content: list[RawJson], texts: list[str], kind: str) -> RawJson:
    """The V2 message of type ``kind`` a 1.x info came from, before its extras."""
    role = info.get("role")
    out: RawJson = {"id": info.get("id"), "type": kind, "time": dict(as_obj(info.get("time")))}
    if role == "assistant":
        out.update(
            agent=info.get("agent"),
            model={"id": info.get("modelID"), "providerID": info.get("providerID")},
            cost=info.get("cost"),
            tokens=info.get("tokens"),
        )
        if "finish" in info:
            out["finish"] = info["finish"]
        if "error" in info:
            err = as_obj(info.get("error"))
            out["error"] = {"type": err.get("name"), "message": as_obj(err.get("data")).get("message")}
    if kind == "assistant":
        out["content"] = content
    elif kind == "compaction":
        out["summary"] = texts[0] if texts else ""
    elif kind != "shell":
        out["text"] = texts[0] if texts else ""
    return out


def keep_extras(msg: Mapping[str, Any], m: RawJson, items: list[Mapping[str, Any]]) -> RawJson:
    """``m`` (``{info, parts}`` made from ``msg``; ``items`` the content item of each part)
    with what reading it back would miss kept on its info and parts."""
    content = []
    for part, item in zip(m["parts"], items, strict=True):
        _aside(part, *_extras(item, _item(part)))
        content.append(dict(item))
    kind = as_text(msg.get("type"))
    back = _message(m["info"], content, [as_text(p.get("text")) for p in m["parts"]], kind)
    keep, drop = _extras(msg, back)
    if kind != _guess(m["info"]):
        keep["type"] = kind
    _aside(m["info"], keep, drop)
    return m


def idle_info(msg: Mapping[str, Any]) -> RawJson:
    """How the mirror keeps a V2 idle marker: the whole message aside, under role ``idle``."""
    return {"id": msg.get("id"), "role": "idle", "time": dict(as_obj(msg.get("time"))), EXTRA: dict(msg)}


def v2_message(m: Mapping[str, Any]) -> RawJson:
    """A 1.x ``{info, parts}`` (as the mirror keeps it) as the V2 message it was made from."""
    info, parts = as_obj(m.get("info")), [as_obj(p) for p in m.get("parts") or ()]
    if info.get("role") == "idle" and isinstance(info.get(EXTRA), Mapping):
        return dict(info[EXTRA])
    content = [_apply(_item(p), p) for p in parts]
    kind = as_text(as_obj(info.get(EXTRA)).get("type")) or _guess(info)
    return _apply(_message(info, content, [as_text(p.get("text")) for p in parts], kind), info)


def v2_session(rec: Mapping[str, Any]) -> RawJson:
    """A session record the tower holds (``v1_session``) as V2 gave it: without the
    ``directory`` that was added from ``location``."""
    out = dict(rec)
    loc = as_obj(rec.get("location"))
    if "directory" in out and out.get("directory") == loc.get("directory"):
        del out["directory"]
    return out
