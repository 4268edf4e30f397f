"""One Claude Code session and its subagents as a tree (pure: file contents in, tree out).

The main transcript is the root (depth 0); each subagent is a child of the session that holds
the Agent (``Task``) call that launched it, found through, in order: the meta file's
``toolUseId``, a tool result's ``toolUseResult.agentId`` (a ``Workflow`` run's agents: its
``runId``), or (1.0.x sidechains kept inside the main file) the call whose prompt is the
sidechain's first message. A subagent whose launching call cannot be found hangs under the
root and is reported. A message id already counted in an
earlier session (a sidechain that replays its parent's messages) keeps its text but not its
usage, so nothing is counted twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson

from archiver.claude.lines import read_lines, split_sidechains
from archiver.claude.messages import BOOKKEEPING, Built, Prior, build_messages
from archiver.claude.model import ClaudeSession, ClaudeTree, JsonObj, RunAgentDoc, SubagentFile
from archiver.claude.resume import CannotResume, SessionPrior, TreePrior
from archiver.claude.workflow import JournalFile, attach_runs
from archiver.errors import WalkError
from archiver.shape import as_obj

__all__ = [
    "ClaudeSession",
    "ClaudeTree",
    "SubagentFile",
    "absorb",
    "build_tree",
    "finish_tree",
    "first_prompt",
    "place_subagents",
]

# bookkeeping lines nothing reads (``messages.BOOKKEEPING`` but the cost state): counted unparsed
_SKIP = frozenset(t.encode() for t in BOOKKEEPING - {"cost-state"})


def first_prompt(messages: Sequence[Mapping[str, Any]]) -> str | None:
    for m in messages:
        if as_obj(m.get("info")).get("role") != "user":
            continue
        for p in m.get("parts") or []:
            if p.get("type") == "text" and str(p.get("text", "")).strip():
                return str(p["text"]).strip()
    return None


def _record(
    sid: str,
    lines: Sequence[Mapping[str, Any]],
    messages: list[JsonObj],
    title: str | None,
    prior: SessionPrior | None = None,
) -> JsonObj:
    stamps = [
        t for m in messages for t in (as_obj(as_obj(m["info"]).get("time")).get("created"),) if t is not None
    ]
    # the envelope of the file's first message, which an earlier read saw when it had one
    had = prior is not None and any(
        as_obj(m.get("info")).get("role") in ("user", "assistant") for m in prior.messages
    )
    first = (
        {"cwd": prior.record.get("directory"), **prior.record}
        if prior is not None and had
        else next((ln for ln in lines if ln.get("type") in ("user", "assistant")), {})
    )
    return {
        "id": sid,
        "title": title,
        "directory": first.get("cwd"),
        "version": first.get("version"),
        "gitBranch": first.get("gitBranch"),
        "time": {"created": min(stamps) if stamps else None, "updated": max(stamps) if stamps else None},
    }


def absorb(tree: ClaudeTree, built: Built) -> None:
    tree.skipped.update(built.skipped)
    tree.unknown_types.update(built.unknown_types)
    tree.unpriced_models |= built.unpriced_models


def _calls(sessions: Iterable[ClaudeSession]) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """tool_use id -> session; agentId (or a Workflow's runId) -> tool_use id; Agent prompt ->
    tool_use id."""
    owner: dict[str, str] = {}
    by_agent: dict[str, str] = {}
    by_prompt: dict[str, str] = {}
    for s in sessions:
        for m in s.messages:
            launched = as_obj(as_obj(as_obj(m.get("info")).get("claude")).get("toolUseResult"))
            agent = launched.get("agentId") or launched.get("runId")
            for p in m.get("parts") or []:
                if p.get("type") == "tool_use" and p.get("id"):
                    owner[str(p["id"])] = s.session_id
                    prompt = as_obj(p.get("input")).get("prompt")
                    if p.get("name") in ("Agent", "Task") and isinstance(prompt, str):
                        by_prompt.setdefault(prompt.strip(), str(p["id"]))
                if p.get("type") == "tool_result" and agent and p.get("tool_use_id"):
                    by_agent[str(agent)] = str(p["tool_use_id"])
    return owner, by_agent, by_prompt


def _meta(sub: SubagentFile, sid: str, tree: ClaudeTree) -> JsonObj:
    if sub.meta is None:
        tree.errors.append(WalkError("missing_meta", "meta", sid, "no agent meta file", sub.name))
        return {}
    try:
        meta = orjson.loads(sub.meta)
    except orjson.JSONDecodeError as exc:
        tree.errors.append(WalkError("malformed", "meta", sid, f"meta file: {exc}", sub.name))
        return {}
    return dict(meta) if isinstance(meta, Mapping) else {}


def build_tree(
    session_id: str,
    main: bytes | None,
    subagents: Sequence[SubagentFile] = (),
    *,
    main_name: str = "",
    journals: Sequence[JournalFile] = (),
    prior: TreePrior | None = None,
) -> ClaudeTree:
    """The tree of one session from its transcript bytes (None: the main file is missing) and
    the journals of its workflow runs. With ``prior``, the bytes are what each file gained since
    the read ``prior`` holds, and the tree is the whole one, as a read of the whole files would
    build it."""
    tree = ClaudeTree(session_id)
    was = prior.sessions if prior is not None else {}
    if prior is not None:
        tree.redacted_before = prior.redaction
        tree.errors.extend(prior.errors)
        tree.skipped.update(prior.skipped)
        tree.unknown_types.update(prior.unknown_types)
    mine = was.get(session_id)
    read = read_lines(
        main or b"", name=main_name, session_id=session_id, lines_before=mine.lines if mine else 0, skip=_SKIP
    )
    tree.errors.extend(read.errors)
    tree.skipped.update(read.skipped)
    if main is None:
        tree.errors.append(
            WalkError("orphan", "session", session_id, "subagent files without their session file", main_name)
        )
    main_lines, chains = split_sidechains(read.objects)
    if chains and prior is not None:
        raise CannotResume(f"{main_name}: sidechain lines")
    states = [ln for ln in main_lines if ln.get("type") == "cost-state"]
    tree.cost_state = dict(states[-1]) if states else (prior.cost_state if prior is not None else None)
    built = build_messages(main_lines, session_id, Prior(mine.messages, mine.usage) if mine else None)
    absorb(tree, built)
    tree.reads[main_name] = (session_id, read.consumed, read.lines, built.usage)
    root = ClaudeSession(session_id, None, 0, None, None, built.messages, {})
    root.title = first_prompt(built.messages)
    root.record = _record(session_id, main_lines, built.messages, root.title, mine)
    root.path = main_name or None
    tree.cli_version = root.record.get("version")
    tree.sessions.append(root)
    pending: list[tuple[ClaudeSession, JsonObj]] = []
    seen: set[str] = set()
    for sub in subagents:
        sid = f"{session_id}.agent-{sub.agent_id}"
        if sid in seen:  # one agent's transcript in two places: read once, never counted twice
            tree.errors.append(WalkError("duplicate", "session", sid, "agent transcript met again", sub.name))
            continue
        seen.add(sid)
        sp = was.get(sid)
        r = read_lines(
            sub.data, name=sub.name, session_id=sid, lines_before=sp.lines if sp else 0, skip=_SKIP
        )
        tree.errors.extend(r.errors)
        tree.skipped.update(r.skipped)
        b = build_messages(r.objects, sid, Prior(sp.messages, sp.usage) if sp else None)
        absorb(tree, b)
        tree.reads[sub.name] = (sid, r.consumed, r.lines, b.usage)
        meta = _meta(sub, sid, tree)
        title = str(meta.get("description") or "") or first_prompt(b.messages)
        s = ClaudeSession(sid, None, 1, meta.get("agentType"), title, b.messages, {}, path=sub.name)
        s.record = _record(sid, r.objects, b.messages, title, sp) | {"agentId": sub.agent_id, "meta": meta}
        if sub.run_id is not None:
            # until its journal says more (or when it says nothing): the run, nothing of the call
            s.workflow = RunAgentDoc(
                run_id=sub.run_id, key=None, label=None, phase=None, status=None, result=None
            )
        pending.append((s, meta))
    missing = attach_runs(tree, [s for s, _ in pending], journals)
    pending.extend((s, {}) for s in missing)
    for first_uuid, lines in chains.items():
        sid = f"{session_id}.sidechain-{first_uuid[:8]}"
        b = build_messages(lines, sid)
        absorb(tree, b)
        s = ClaudeSession(sid, None, 1, "sidechain", first_prompt(b.messages), b.messages, {})
        s.record = _record(sid, lines, b.messages, s.title)
        pending.append((s, {}))
    place_subagents(tree, pending)
    finish_tree(tree)
    return tree


def place_subagents(tree: ClaudeTree, pending: list[tuple[ClaudeSession, JsonObj]]) -> None:
    """Give each subagent its parent and depth; place parents before children (BFS order)."""
    owner, by_agent, by_prompt = _calls([tree.sessions[0], *(s for s, _ in pending)])
    by_id = {s.session_id: s for s, _ in pending}
    for s, meta in pending:
        agent_id = str(s.record.get("agentId") or "")
        run = s.workflow["run_id"] if s.workflow else ""
        call = meta.get("toolUseId") or by_agent.get(agent_id) or (by_agent.get(run) if run else None)
        if not call and s.agent == "sidechain":
            call = by_prompt.get(s.title or "")
        s.tool_use_id = str(call) if call else None
        parent = owner.get(s.tool_use_id or "")
        if parent is None or parent == s.session_id:
            tree.errors.append(
                WalkError(
                    "orphan", "parent", s.session_id, "the call that launched it was not found", s.path or ""
                )
            )
            parent = tree.root_id
        s.parent_id = parent
    depth: dict[str, int] = {tree.root_id: 0}

    def depth_of(sid: str, seen: frozenset[str]) -> int:
        if sid in depth:
            return depth[sid]
        s = by_id[sid]
        pid = s.parent_id or tree.root_id
        if pid in seen:  # subagents that launched each other: this one hangs under the root
            tree.errors.append(WalkError("cycle", "parent", sid, f"{pid} descends from it", s.path or ""))
            s.parent_id, pid = tree.root_id, tree.root_id
        d = depth_of(pid, seen | {sid}) + 1
        depth[sid] = d
        return d

    for s, _ in pending:
        s.depth = depth_of(s.session_id, frozenset({s.session_id}))
    tree.sessions.extend(sorted((s for s, _ in pending), key=lambda s: s.depth))


def finish_tree(tree: ClaudeTree) -> None:
    """Count each message id's usage once over the whole tree, in BFS order."""
    counted: set[str] = set()
    seen_users: set[str] = set()
    for s in tree.sessions:
        for m in s.messages:
            info = m["info"]
            if info.get("role") == "assistant":
                if info["id"] in counted:
                    info["replayed"] = True
                    info["tokens"] = {
                        "input": 0,
                        "output": 0,
                        "reasoning": 0,
                        "cache": {"read": 0, "write": 0},
                    }
                    info["cache_write_1h"] = 0
                    info["cost"], info["cost_source"] = 0.0, "replayed"
                counted.add(info["id"])
            elif info.get("role") == "user":
                if info["id"] in seen_users:
                    info["replayed"] = True
                seen_users.add(info["id"])
