"""OpenCode 2's typed messages (``content[]``) and session records in the 1.x shapes the tower
folds (pure): ``v1_message`` gives ``{info, parts}`` (text, reasoning and tool parts, a stored
shell command or compaction as text), ``v1_session`` the 1.x session info (``directory`` from
``location``). Used by ``tower.events_v2`` for what the stream builds up and by the mirror's
fill for what the server answers, so both read alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archiver.shape import RawJson, as_obj, as_text
from tower.messages_v2_back import keep_extras

__all__ = ["error_v1", "pid", "v1_message", "v1_session"]


def _n(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else None


def _text(content: object) -> str:
    """V2 tool output is ``content[]`` of text and file items: the text, files by name."""
    out = []
    for item in content if isinstance(content, list) else []:
        it = as_obj(item)
        out.append(
            as_text(it.get("text")) if it.get("type") == "text" else as_text(it.get("name") or it.get("uri"))
        )
    return "\n".join(x for x in out if x)


def _count(v: object) -> int | float:
    # kept as given (an int stays an int), so reading the V2 message back needs no copy of it
    return v if isinstance(v, int | float) and not isinstance(v, bool) and v == v else 0


def _tokens(t: object) -> RawJson:
    t = as_obj(t)
    cache = as_obj(t.get("cache"))
    return {
        "input": _count(t.get("input")),
        "output": _count(t.get("output")),
        "reasoning": _count(t.get("reasoning")),
        "cache": {"read": _count(cache.get("read")), "write": _count(cache.get("write"))},
    }


def error_v1(e: object) -> RawJson:
    """A V2 error ``{type, message}`` as 1.x names one ``{name, data: {message}}``."""
    e = as_obj(e)
    return {"name": as_text(e.get("type")) or "error", "data": {"message": as_text(e.get("message"))}}


def v1_session(info: Mapping[str, Any]) -> RawJson:
    """A V2 session (or ``session.created``'s data) as 1.x session info: ``directory`` from
    ``location``, the rest kept."""
    out = {k: v for k, v in info.items() if k != "sessionID"}
    out["id"] = as_text(info.get("id")) or as_text(info.get("sessionID"))
    loc = as_obj(info.get("location"))
    if "directory" not in out and isinstance(loc.get("directory"), str):
        out["directory"] = loc["directory"]
    return out


def _tool_part(item: Mapping[str, Any], pid: str, mid: str, sid: str) -> RawJson:
    state = as_obj(item.get("state"))
    status = as_text(state.get("status"))
    t = as_obj(item.get("time"))
    st: RawJson = {
        "status": {"streaming": "pending", "error": "error", "completed": "completed"}.get(status, "running"),
        "input": state.get("input") if isinstance(state.get("input"), Mapping) else {},
        "time": {"start": t.get("created"), **({"end": t["completed"]} if "completed" in t else {})},
    }
    if "metadata" in state:
        st["metadata"] = state["metadata"]
    if status == "completed":
        st["output"] = _text(state.get("content"))
    elif status == "error":
        st["error"] = as_text(as_obj(state.get("error")).get("message")) or "error"
    return {
        "id": pid,
        "sessionID": sid,
        "messageID": mid,
        "type": "tool",
        "callID": as_text(item.get("id")),
        "tool": as_text(item.get("name")) or "tool",
        "state": st,
    }


def _part(item: Mapping[str, Any], pid: str, mid: str, sid: str) -> RawJson | None:
    kind = item.get("type")
    if kind == "tool":
        return _tool_part(item, pid, mid, sid)
    if kind in ("text", "reasoning"):
        return {
            "id": pid,
            "sessionID": sid,
            "messageID": mid,
            "type": kind,
            "text": as_text(item.get("text")),
        }
    return None


def pid(mid: str, i: int) -> str:
    return f"prt_{mid.removeprefix('msg_')}_{i:04d}"  # sorts in content order within a message


def _v1_info(msg: Mapping[str, Any], sid: str) -> RawJson:
    kind = as_text(msg.get("type"))
    t = as_obj(msg.get("time"))
    info: RawJson = {
        "id": as_text(msg.get("id")),
        "sessionID": sid,
        "role": "assistant" if kind in ("assistant", "compaction") else "user",
        "time": {"created": t.get("created"), **({"completed": t["completed"]} if "completed" in t else {})},
    }
    if kind in ("assistant", "compaction"):
        model = as_obj(msg.get("model"))
        info.update(
            modelID=as_text(model.get("id")),
            providerID=as_text(model.get("providerID")),
            mode=as_text(msg.get("agent")),
            agent=as_text(msg.get("agent")),
            cost=_n(msg.get("cost")) or 0.0,
            tokens=_tokens(msg.get("tokens")),
        )
        if msg.get("finish"):
            info["finish"] = msg["finish"]
        if msg.get("error"):
            info["error"] = error_v1(msg.get("error"))
        if kind == "compaction":
            info["summary"] = True
    return info


def v1_message(msg: Mapping[str, Any], sid: str) -> RawJson | None:
    """One V2 message (``content[]``) as a 1.x ``{info, parts}``; None for a kind 1.x has no
    message for (idle markers, switches). What the 1.x shape cannot say is kept on the info and
    parts (``tower.messages_v2_back``), so the mirror can give the V2 message back."""
    kind = as_text(msg.get("type"))
    mid = as_text(msg.get("id"))
    if not mid or kind not in ("user", "assistant", "synthetic", "compaction", "shell"):
        return None
    info = _v1_info(msg, sid)
    parts: list[RawJson] = []
    items: list[Mapping[str, Any]] = []  # the content item each part was made from
    if kind == "assistant":
        for i, item in enumerate(c for c in (msg.get("content") or ()) if isinstance(c, Mapping)):
            if (p := _part(item, pid(mid, i), mid, sid)) is not None:
                parts.append(p)
                items.append(item)
    else:
        if kind == "shell":
            out = as_obj(msg.get("output"))
            text = f"$ {as_text(msg.get('command'))}\n{as_text(out.get('output'))}"
        else:
            text = as_text(msg.get("text")) or as_text(msg.get("summary"))
        parts.append({"id": pid(mid, 0), "sessionID": sid, "messageID": mid, "type": "text", "text": text})
        items.append({"type": "text", "text": text})
    return keep_extras(msg, {"info": info, "parts": parts}, items)
