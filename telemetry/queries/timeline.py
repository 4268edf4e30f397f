"""A session's message timeline, a page at a time, read from its archive file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archiver.convert_v2 import is_v2_message, metrics_view
from archiver.pricing import OCTEL_PRICED
from archiver.shape import as_num, as_obj, text_or_none
from telemetry.queries.models import MessagePage, MessageView, Tokens
from telemetry.queries.session_detail import iso_ms

__all__ = ["message_page", "message_position", "message_view"]


def _l(v: object) -> list[Any]:
    return v if isinstance(v, list) else []


def _i(v: object) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def _error_text(err: Mapping[str, Any]) -> str | None:
    if not err:
        return None
    text = str(err.get("name") or "error")
    detail = as_obj(err.get("data")).get("message")
    return f"{text}: {detail}" if detail else text


def message_view(index: int, m: Mapping[str, Any], cost: float | None = None) -> MessageView:
    """One archived message for the timeline: a summary of its info and its parts as stored
    (``cost``: octel's price of an answer its server recorded no cost for)."""
    if is_v2_message(m):  # OpenCode 2: the step's numbers as for 1.x, its items as parts
        view = metrics_view([m])[0]
        parts = view["parts"] or [{"type": "raw", "value": dict(m)}]
        m = {"info": view["info"], "parts": parts}
    info = as_obj(m.get("info"))
    if not info and "parts" not in m:  # a message in another layout: show it as one raw part
        return MessageView(
            index=index,
            id=text_or_none(m.get("id")),
            role=text_or_none(m.get("role") or m.get("type")),
            parts=[{"type": "raw", "value": dict(m)}],
        )
    t = as_obj(info.get("time"))
    created, completed = t.get("created"), t.get("completed")
    assistant = info.get("role") == "assistant"
    tokens = as_obj(info.get("tokens"))
    cache = as_obj(tokens.get("cache"))
    duration = None
    if isinstance(created, int | float) and isinstance(completed, int | float):
        duration = (completed - created) / 1000
    return MessageView(
        index=index,
        id=text_or_none(info.get("id")),
        role=text_or_none(info.get("role")),
        agent=text_or_none(info.get("agent") or info.get("mode")),
        created_at=iso_ms(created),
        completed_at=iso_ms(completed),
        duration_s=duration,
        in_flight=assistant and completed is None,
        tokens=Tokens(
            input=_i(tokens.get("input")),
            output=_i(tokens.get("output")),
            reasoning=_i(tokens.get("reasoning")),
            cache_read=_i(cache.get("read")),
            cache_write=_i(cache.get("write")),
        )
        if assistant
        else None,
        cost_usd=(cost if cost is not None else as_num(info.get("cost"))) if assistant else None,
        finish=text_or_none(info.get("finish")),
        error=_error_text(as_obj(info.get("error"))),
        parts=[dict(p) for p in _l(m.get("parts")) if isinstance(p, Mapping)],
    )


def message_position(messages: list[Any], at: str) -> int | None:
    """Index of the message whose id, or one of whose parts' ids or call ids, is `at`."""
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping):
            continue
        if as_obj(m.get("info")).get("id") == at or m.get("id") == at:
            return i
        for p in _l(m.get("parts")):
            if isinstance(p, Mapping) and at in (p.get("id"), p.get("callID")):
                return i
    return None


def message_page(session_id: str, doc: Mapping[str, Any], offset: int, limit: int) -> MessagePage:
    """Messages `offset` … `offset + limit` of the archive, oldest first, with paging offsets."""
    msgs = _l(doc.get("messages"))
    page = msgs[offset : offset + limit]
    redaction = doc.get("redaction")
    turns = [as_obj(t) for t in _l(doc.get("per_turn"))]
    priced = {t.get("index"): as_num(t.get("cost")) for t in turns if t.get("cost_source") in OCTEL_PRICED}
    return MessagePage(
        session_id=session_id,
        total=len(msgs),
        offset=offset,
        limit=limit,
        prev_offset=max(0, offset - limit) if offset > 0 else None,
        next_offset=offset + limit if offset + limit < len(msgs) else None,
        items=[
            message_view(offset + i, m, priced.get(offset + i))
            for i, m in enumerate(page)
            if isinstance(m, Mapping)
        ],
        redaction=dict(redaction) if isinstance(redaction, Mapping) else {},
    )
