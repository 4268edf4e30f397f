"""OpenCode 2's forms (its questions to the user) as the 1.x permission events the tower folds
(pure): a ``form.created`` is an ask on the form's id (``frm_…``), settled by ``form.replied`` or
``form.cancelled``. Read by ``tower.events_v2``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj, as_text

__all__ = ["form_event"]


def form_event(kind: str, data: Mapping[str, Any]) -> tuple[str, JsonObj] | None:
    """(1.x event type, properties) of one ``form.*`` frame's data; None for a form of no session."""
    form = as_obj(data.get("form")) if kind == "form.created" else data
    fid, fsid = as_text(form.get("id")), as_text(form.get("sessionID"))
    if not fid or not fsid or fsid == "global":
        return None  # a form of no session (an MCP elicitation): nobody's live row
    if kind == "form.created":
        meta_kind = as_text(as_obj(form.get("metadata")).get("kind"))
        title = as_text(form.get("title")) or meta_kind or "question"
        ask = {"id": fid, "sessionID": fsid, "permission": "form", "patterns": [title], "form": True}
        return "permission.asked", ask
    if kind in ("form.replied", "form.cancelled"):
        reply = "answered" if kind == "form.replied" else "cancelled"
        return "permission.replied", {"sessionID": fsid, "requestID": fid, "reply": reply}
    return None
