"""A session tree (its archive documents) and its dispatcher cycle as span records (pure).

    dispatch_cycle {driver}            (only when a cycle names the root session)
    └─ invoke_agent {agent}            one per session, the root first
       └─ chat {model}                 one per assistant turn
          └─ execute_tool {tool}       one per tool part of that turn
             └─ invoke_agent {agent}   the subagent a `task` call launched

A subagent hangs under the `execute_tool task` span whose part names its session
(`state.metadata.sessionId`), or, in a Claude Code tree, under the `execute_tool Agent` (`Task`)
span of the call its archive names (`claude_tools`); one no call names hangs under its parent's
`invoke_agent`. Turns are the archive's own per-turn entries (the numbers octel counted), computed
again only for a document that has none.
A parent's time window is widened to hold its children, so every span lies within its parent.
Findings become `gen_ai.evaluation.result` events on their session's `invoke_agent` span.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from archiver.claude.metrics import per_turn as claude_per_turn
from archiver.convert_v2 import metrics_view
from archiver.document import SCHEMA_VERSION_V2
from archiver.metrics import per_turn
from archiver.shape import as_obj
from telemetry.otel_export.attributes import (
    agent_attributes,
    chat_attributes,
    message_fields,
    session_heads,
    tool_attributes,
)
from telemetry.otel_export.claude_tools import is_claude, launching_call, tool_parts
from telemetry.otel_export.cycle_findings import (
    CycleFacts,
    cycle_attributes,
    cycle_id_attribute,
    finding_event,
)
from telemetry.otel_export.fields import decode
from telemetry.otel_export.order import root_of, session_order
from telemetry.otel_export.spans import Kind, SpanEvent, SpanRecord, Status, span_id_bytes, span_ids, trace_id
from telemetry.otel_export.times import doc_window, ms_to_ns
from telemetry.otel_export.wire import SpanEncoder

__all__ = ["CycleFacts", "encoded_tree_spans", "tree_spans"]

JsonObj = Mapping[str, Any]


class _Node:
    """A span while the tree is built: its window may still widen. Nodes are added parents
    first, so the insertion order of `_Builder.nodes` is a parents-before-children order.
    Its attributes are already encoded (`fields`): Span fields, in order."""

    __slots__ = (
        "attributes",
        "end_ns",
        "events",
        "key",
        "kind",
        "name",
        "parent",
        "session_id",
        "start_ns",
        "status",
        "status_message",
    )

    def __init__(
        self, key: str, name: str, kind: Kind, start_ns: int, end_ns: int, attributes: bytes, sid: str
    ) -> None:
        self.key, self.name, self.kind, self.attributes, self.session_id = key, name, kind, attributes, sid
        self.start_ns = start_ns
        self.end_ns = end_ns if end_ns > start_ns else start_ns  # a span never ends before it starts
        self.parent: str | None = None
        self.events: list[SpanEvent] | None = None
        self.status: Status = "UNSET"
        self.status_message: str | None = None


_MAPPING = (dict, Mapping)  # isinstance: a dict first (the common case), then any Mapping


def _turns(doc: JsonObj, messages: list[JsonObj], claude: bool) -> dict[str, JsonObj]:
    """The per-turn entries by message id: the archive's own, else computed again."""
    stored = doc.get("per_turn")
    if isinstance(stored, list):
        turns: dict[str, JsonObj] = {}
        for t in stored:
            if not isinstance(t, dict):
                break
            mid = t.get("message_id")
            turns[mid if type(mid) is str else str(mid)] = t
        else:
            return turns
    computed = claude_per_turn(messages) if claude else per_turn(messages)
    return {str(t.get("message_id")): t for t in computed}


class _Builder:
    def __init__(self, root: str, content: bool) -> None:
        self.root = root
        self.content = content
        self.nodes: dict[str, _Node] = {}
        self.calls: dict[tuple[str, str], str] = {}  # (session, tool call id) -> span key

    def add(self, node: _Node, parent: str | None) -> None:
        if node.key in self.nodes:  # the same message or part twice in a document: keep the first
            return
        node.parent = parent
        self.nodes[node.key] = node

    def session(self, doc: JsonObj, parent: str | None) -> dict[str, str]:
        """The session's spans; returns {child session id: key of the task span that launched it}."""
        sid = str(doc["session_id"])
        start, end = doc_window(doc)
        key = f"session:{sid}"
        agent, attributes = agent_attributes(doc, self.root)
        node = _Node(key, f"invoke_agent {agent}", "INTERNAL", start, end, attributes, sid)
        self.add(node, parent)
        heads = session_heads(self.root, sid)
        launched: dict[str, str] = {}
        messages = [m for m in doc.get("messages") or [] if isinstance(m, _MAPPING)]
        if doc.get("schema_version") == SCHEMA_VERSION_V2:  # OpenCode 2's typed messages
            messages = list[Mapping[Any, Any]](metrics_view(messages))
        claude = is_claude(doc)
        turns = _turns(doc, messages, claude)
        calls = tool_parts(messages) if claude else {}
        prompt: JsonObj | None = None
        for m in messages:
            info = m.get("info")
            if type(info) is not dict:
                info = as_obj(info)
            role = info.get("role")
            if role == "user":
                for p in m.get("parts") or []:
                    if (p if type(p) is dict else as_obj(p)).get("type") == "text":
                        prompt = m  # a Claude Code tool result is a user message, not a prompt
                        break
                continue
            mid = str(info.get("id"))
            if mid in turns and role == "assistant":
                got = self.turn(
                    sid, mid, key, heads, m, turns[mid], prompt, end, calls.get(mid) if claude else None
                )
                if got:
                    launched |= got
                prompt = None
        findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
        if findings:
            node.events = [finding_event(f, messages, end) for f in findings]
        return launched

    def turn(
        self,
        sid: str,
        mid: str,
        parent: str,
        heads: tuple[bytes, bytes],
        m: JsonObj,
        turn: JsonObj,
        prompt: JsonObj | None,
        fallback: int,
        tools: Sequence[JsonObj] | None,
    ) -> dict[str, str] | None:
        """A turn's span and its tool calls' (``tools``: Claude Code's, made OpenCode-shaped);
        returns {child session id: key of the task span that launched it}, if any."""
        parts = m.get("parts") or []
        # integer milliseconds (OpenCode's, most turns) without a call; anything else: ms_to_ns
        t = turn.get("created")
        start = t * 1_000_000 if type(t) is int and t >= 0 else ms_to_ns(t, fallback)
        t = turn.get("completed")
        end = t * 1_000_000 if type(t) is int and t >= 0 else ms_to_ns(t, start)
        key = f"message:{sid}:{mid}"
        content = self.content
        mfield, rfield = message_fields(mid)
        attrs = chat_attributes(heads[0], mfield, rfield, turn, parts, prompt if content else None, content)
        node = _Node(key, f"chat {turn.get('model') or 'unknown'}", "CLIENT", start, end, attrs, sid)
        error = turn.get("error")
        if error:
            node.status, node.status_message = "ERROR", str(turn.get("error_message") or error)
        self.add(node, parent)
        launched: dict[str, str] | None = None
        calls, tool_head = self.calls, heads[1]
        for p in parts if tools is None else tools:
            if (type(p) is not dict and not isinstance(p, Mapping)) or p.get("type") != "tool":
                continue
            state = p.get("state")
            if type(state) is not dict:
                state = as_obj(state)
            times = state.get("time")
            if type(times) is not dict:
                times = as_obj(times)
            t = times.get("start")
            t0 = t * 1_000_000 if type(t) is int and t >= 0 else ms_to_ns(t, start)
            t = times.get("end")
            t1 = t * 1_000_000 if type(t) is int and t >= 0 else ms_to_ns(t, t0)
            call, pid, tool_name, status = p.get("callID"), p.get("id"), p.get("tool"), state.get("status")
            tkey = f"part:{sid}:{pid or call}"
            tattrs = tool_attributes(tool_head, mfield, tool_name, call, pid, status, state, content)
            tool = _Node(tkey, f"execute_tool {tool_name}", "INTERNAL", t0, t1, tattrs, sid)
            if status == "error":
                tool.status, tool.status_message = "ERROR", str(state.get("error") or "tool error")[:500]
            self.add(tool, key)
            if call:
                calls[(sid, str(call))] = tkey
            if tool_name == "task":
                child = as_obj(state.get("metadata")).get("sessionId")
                if isinstance(child, str) and child:
                    launched = launched or {}
                    launched.setdefault(child, tkey)
        return launched

    def widen(self) -> None:
        """Stretch every node's window over its children's: children come after their parent in
        insertion order, so one pass from the last node folds each subtree into its root."""
        nodes = self.nodes
        for n in reversed(nodes.values()):
            if n.parent is not None:
                p = nodes[n.parent]
                if n.start_ns < p.start_ns:
                    p.start_ns = n.start_ns
                if n.end_ns > p.end_ns:
                    p.end_ns = n.end_ns


def _build(docs: Sequence[JsonObj], cycle: CycleFacts | None, content: bool) -> tuple[str, _Builder]:
    if not docs:
        raise ValueError("no archive documents given")
    root = root_of(docs)
    by_id = {str(d["session_id"]): d for d in docs}
    top = root if root in by_id else min(by_id)
    b = _Builder(root, content)
    cycle_key = None
    if cycle is not None:
        cycle_key = f"cycle:{cycle.cycle_id}"
        start = ms_to_ns(cycle.started_ms, 0)
        attrs = cycle_attributes(
            cycle.cycle_id,
            cycle.driver,
            cycle.counts,
            cycle.terminal_state,
            cycle.worker_outcome,
            cycle.error_kind,
            root,
            cycle.ended_ms is None,
        )
        end = ms_to_ns(cycle.ended_ms, start)
        node = _Node(cycle_key, f"dispatch_cycle {cycle.driver}", "INTERNAL", start, end, attrs, root)
        if cycle.error_kind:
            node.status, node.status_message = "ERROR", cycle.error_kind
        b.add(node, None)
    launched: dict[str, str] = {}
    for sid, parent_sid in session_order(by_id, top):
        parent = cycle_key if parent_sid is None else f"session:{parent_sid}"
        call = launching_call(by_id[sid])
        via = launched.get(sid) or (b.calls.get((parent_sid, call)) if parent_sid and call else None)
        if parent_sid is not None and via in b.nodes:
            parent = via
        launched |= b.session(by_id[sid], parent)
        if cycle is not None and parent_sid is None:
            b.nodes[f"session:{sid}"].attributes += cycle_id_attribute(cycle.cycle_id)
    b.widen()
    return root, b


def _events(n: _Node) -> tuple[SpanEvent, ...]:
    """The node's events, each moved inside the node's (widened) window."""
    return tuple(e._replace(time_ns=min(max(e.time_ns, n.start_ns), n.end_ns)) for e in n.events or ())


def tree_spans(
    docs: Sequence[JsonObj], *, cycle: CycleFacts | None = None, content: bool = False
) -> list[SpanRecord]:
    """Span records of one session tree, parents before children.

    ``docs`` are the archive documents of the tree's sessions (any order; the root's need not be
    there, its children then hang at the top). ``content`` adds prompts, outputs and tool arguments
    and results as archived (redacted). Attributes are decoded from what `encoded_tree_spans` sends.
    """
    root, b = _build(docs, cycle, content)
    tid, ids = trace_id(root), span_ids(root, b.nodes)  # once per span: a parent has many children
    out = []
    for n in b.nodes.values():
        head = (tid, ids[n.key], ids[n.parent] if n.parent is not None else None, n.name, n.kind)
        out.append(
            SpanRecord(
                *head,
                n.start_ns,
                n.end_ns,
                decode(n.attributes),
                _events(n),
                n.status,
                n.status_message,
                n.session_id,
            )
        )
    return out


def encoded_tree_spans(
    docs: Sequence[JsonObj], encoder: SpanEncoder, *, cycle: CycleFacts | None = None, content: bool = False
) -> list[bytes]:
    """`tree_spans` as the encoder's Span messages, written without span records: what the
    export sends (`encoder.request` of them is `encoder.encode` of the records)."""
    root, b = _build(docs, cycle, content)
    ids = span_id_bytes(root, b.nodes)
    rows = [
        (
            ids[n.key],
            ids[n.parent] if n.parent is not None else None,
            n.name,
            n.kind,
            n.start_ns,
            n.end_ns,
            n.attributes,
            _events(n) if n.events else (),
            n.status,
            n.status_message,
        )
        for n in b.nodes.values()
    ]
    return encoder.spans(trace_id(root), rows)
