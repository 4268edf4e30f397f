"""Build the archive document of each OpenCode session of a walked tree (pure): schema v3 for
OpenCode 1.x, v4 for OpenCode 2 (its messages as it served them; the per-turn metrics and the
detectors read them through ``archiver.convert_v2``).

Redaction happens later, on the serialised text, so it covers every field built here, the
detector evidence included.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import detectors
from archiver import convert, convert_v2
from archiver.errors import WalkError
from archiver.metrics import per_turn, rollup, totals
from archiver.pricing import opencode_cost_check, price_turns
from archiver.shape import RawJson as JsonObj
from archiver.walk import TreeSnapshot
from detectors.findings import FindingDict

__all__ = [
    "ARCHIVER_VERSION",
    "SCHEMA_VERSION",
    "SCHEMA_VERSION_V2",
    "build_documents",
    "parse_agent",
    "score_session",
]

SCHEMA_VERSION = 3
SCHEMA_VERSION_V2 = 4  # sessions of an OpenCode 2 server
ARCHIVER_VERSION = "octel-archiver/3.0"
_SUBAGENT = re.compile(r"^(?P<title>.*?)\s*\(@(?P<agent>[^()\s]+) subagent\)\s*$", re.S)


def parse_agent(title: str | None, fallback: str | None = None) -> tuple[str | None, str | None]:
    """(agent, subagent title) from a child title such as ``Check it (@general subagent)``."""
    m = _SUBAGENT.match(title or "")
    if m:
        return m["agent"], m["title"]
    return fallback, None


def score_session(
    messages: Sequence[Mapping[str, Any]],
    status_history: Sequence[Mapping[str, Any]] = (),
    permission_events: Sequence[Mapping[str, Any]] = (),
    session_id: str | None = None,
) -> list[FindingDict]:
    """Detector findings for one session's messages, status samples and permission events."""
    stream = convert.from_opencode(list(messages), events=list(permission_events), session_id=session_id)
    status = convert.status_from_opencode(list(status_history))
    perms = convert.permissions_from_opencode(list(permission_events), session_id=session_id)
    found = detectors.score(stream, status=status, permissions=perms)
    return [f.to_dict() for f in found]


def _model(rec: Mapping[str, Any], messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The session's model, else its last step's (``messages`` in the ``{info, parts}`` shape)."""
    m = rec.get("model")
    if isinstance(m, Mapping) and m.get("id"):
        return f"{m.get('providerID', '')}/{m['id']}".lstrip("/")
    for msg in reversed(messages):
        info = msg.get("info") or {}
        if info.get("role") == "assistant" and info.get("modelID"):
            return f"{info.get('providerID', '')}/{info['modelID']}".lstrip("/")
    return None


def build_documents(
    tree: TreeSnapshot,
    *,
    archived_at: str,
    label: str | None = None,
    status_history: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    permission_events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    score: bool = True,
) -> list[JsonObj]:
    """One document per session of the tree, in BFS order."""
    status_history = status_history or {}
    permission_events = permission_events or {}
    v2 = (tree.generation or 1) >= 2
    view = {s.session_id: convert_v2.metrics_view(s.messages) if v2 else s.messages for s in tree.sessions}
    turns = {sid: per_turn(msgs) for sid, msgs in view.items()}
    # turns the server recorded no cost for are priced before anything sums them
    unpriced = {sid: price_turns(t) for sid, t in turns.items()}
    own = {sid: totals(view[sid], turns[sid]) for sid in view}
    sub = rollup(own, {s.session_id: s.parent_id for s in tree.sessions})
    docs: list[JsonObj] = []
    for snap in tree.sessions:
        sid = snap.session_id
        rec = snap.session or {}
        agent, sub_title = parse_agent(rec.get("title"), rec.get("agent"))
        status = list(status_history.get(sid, ()))
        perms = list(permission_events.get(sid, ()))
        errors: list[WalkError] = tree.walk_errors if snap.depth == 0 else [e for e in snap.errors]
        findings = score_session(snap.messages, status, perms, sid) if score else []
        doc: JsonObj = {
            "schema_version": SCHEMA_VERSION_V2 if v2 else SCHEMA_VERSION,
            "archived_at": archived_at,
            "archiver_version": ARCHIVER_VERSION,
            "source": {
                "kind": "opencode",
                "server_url": tree.server_url,
                "opencode_version": tree.opencode_version or rec.get("version"),
                "messages_route": snap.messages_family or None,
                "origin": tree.origin,
            },
            "label": label,
            "session_id": sid,
            "root_session_id": tree.root_id,
            "parent_session_id": snap.parent_id,
            "depth": snap.depth,
            "agent": agent,
            "subagent_title": sub_title,
            "title": rec.get("title"),
            "model": _model(rec, view[sid]),
            "session": rec,
            "messages": snap.messages,
            "diff": snap.diff,
            "todo": snap.todo,
            "per_turn": turns[sid],
            "totals": own[sid],
            "subtree": sub[sid],
            "status_history": status,
            "permission_events": perms,
            "walk_errors": [e.to_dict() for e in errors],
            "findings": findings,
            # a session in which no turn ever happened did not work: never "healthy"
            "verdict": detectors.worst_verdict(
                detectors.Finding(f["detector"], f["verdict"], f["score"]) for f in findings
            )
            if turns[sid] or findings
            else "suspect",
            "claude": None,
            "cost_check": opencode_cost_check(turns[sid], unpriced[sid]),
        }
        if v2:
            doc["source"]["opencode_generation"] = 2
            doc["execution"] = convert_v2.execution(snap.messages, rec)
        docs.append(doc)
    return docs
