"""A ``claude -p --output-format stream-json --verbose`` transcript as a session tree (pure).

Messages with a ``parent_tool_use_id`` come from a subagent (its ``agent_id`` names it) and
become a child of the session holding that call. Without ``--forward-subagent-text`` the CLI
forwards only a subagent's prompt, tool calls and results, so such a child has no text of its
own. Each assistant message carries the usage of its ``message_start`` (``output_tokens`` 1): the
numbers that settle a run are the ``result`` messages', kept in ``results`` (a background
subagent that finished after its parent makes two). ``system/api_retry`` events are kept as
system messages; ``init`` and task events are bookkeeping.
"""

from __future__ import annotations

import orjson

from archiver.claude.lines import read_lines
from archiver.claude.messages import build_messages
from archiver.claude.tree import ClaudeSession, ClaudeTree, absorb, finish_tree, first_prompt, place_subagents
from archiver.shape import RawJson as JsonObj
from archiver.shape import as_obj

__all__ = ["is_stream_json", "tree_from_stream"]

_KEPT_SYSTEM = frozenset({"api_retry", "api_error", "compact_boundary"})


def is_stream_json(data: bytes) -> bool:
    """stream-json output (``system/init``, ``result`` or ``parent_tool_use_id`` lines), not a
    transcript (whose lines carry ``sessionId``)."""
    head = data[:200_000]
    return b'"parent_tool_use_id"' in head or b'"subtype":"init"' in head or b'"type":"result"' in head


def tree_from_stream(data: bytes, *, name: str = "stream-json") -> ClaudeTree:
    """The tree of the run printed in ``data``; unreadable lines are reported, never raised."""
    read = read_lines(data, name=name)
    session_id = next(
        (str(o["session_id"]) for o in read.objects if isinstance(o.get("session_id"), str)),
        "unknown-session",
    )
    tree = ClaudeTree(session_id, origin="stream-json")
    tree.errors.extend(read.errors)
    main: list[JsonObj] = []
    subs: dict[str, tuple[str, JsonObj, list[JsonObj]]] = {}
    for obj in read.objects:
        kind, subtype = obj.get("type"), obj.get("subtype")
        if subtype is not None and not isinstance(subtype, str):  # a list or an object: as text
            subtype = orjson.dumps(subtype).decode()[:40]
        if kind == "result":
            tree.results.append(obj)
            continue
        if kind == "system" and subtype == "init":
            tree.cli_version = tree.cli_version or obj.get("claude_code_version")
        if kind == "system" and subtype not in _KEPT_SYSTEM:
            tree.skipped[f"system/{subtype}"] += 1
            continue
        parent_call = obj.get("parent_tool_use_id")
        line = dict(obj) | {"sessionId": session_id}
        if isinstance(parent_call, str) and parent_call:
            agent = str(obj.get("agent_id") or parent_call)
            entry = subs.setdefault(
                agent,
                (
                    parent_call,
                    {"subagent_type": obj.get("subagent_type"), "description": obj.get("task_description")},
                    [],
                ),
            )
            entry[2].append(line)
        else:
            main.append(line)
    built = build_messages(main, session_id)
    absorb(tree, built)
    title = first_prompt(built.messages)
    root = ClaudeSession(session_id, None, 0, None, title, built.messages, {"id": session_id, "title": title})
    tree.sessions.append(root)
    pending: list[tuple[ClaudeSession, JsonObj]] = []
    for agent_id, (call, about, lines) in subs.items():
        sid = f"{session_id}.agent-{agent_id}"
        b = build_messages(lines, sid)
        absorb(tree, b)
        desc = about.get("description")
        s = ClaudeSession(
            sid, None, 1, about.get("subagent_type"), desc or first_prompt(b.messages), b.messages, {}
        )
        s.record = {"id": sid, "title": s.title, "agentId": agent_id, "meta": {"toolUseId": call}}
        pending.append((s, {"toolUseId": call}))
    place_subagents(tree, pending)
    for s in tree.sessions:
        stamps = [as_obj(m["info"]["time"]).get("created") for m in s.messages]
        known = [t for t in stamps if t is not None]
        s.record.setdefault(
            "time", {"created": min(known) if known else None, "updated": max(known) if known else None}
        )
        s.record.setdefault("version", tree.cli_version)
    finish_tree(tree)
    return tree
