"""One Claude Code transcript followed as it grows, and what its session is doing now (pure:
bytes and times in, state out).

`ClaudeTail.feed` takes the bytes the file gained since the last read (from ``offset``): the
archive's own readers turn them into messages (`archiver.claude.lines.read_lines`, then
`build_messages` continuing the answer still being written), so the live row and the archive
count the same tokens the same way. A line cut short stays unread until its newline comes.

`derive` names the state from the messages and, when the CLI lists the session
(`claude agents --json`), what the CLI says: a tool call with no result is a tool running, or
a person asked (the CLI says it waits on input, or the tool is a question to the user); an
answer that ended its turn is idle; a prompt or a tool result with no answer yet is busy.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from archiver.claude.lines import read_lines
from archiver.claude.messages import BOOKKEEPING, Prior, build_messages
from archiver.shape import RawJson, as_obj

__all__ = ["QUESTION_TOOLS", "AgentSeen", "ClaudeState", "ClaudeTail", "derive", "totals"]

# bookkeeping lines no state or count needs: counted unparsed, as the archive does
_SKIP = frozenset(t.encode() for t in BOOKKEEPING - {"cost-state"})
# tools that put a question to the person at the prompt: waiting on them is needing input
QUESTION_TOOLS = frozenset({"AskUserQuestion", "ExitPlanMode"})
_INTERRUPTED = ("[Request interrupted by user", "The user doesn't want to proceed")
_DONE = frozenset({"end_turn", "stop_sequence", "max_tokens", "refusal"})
_PATTERN_KEYS = ("command", "file_path", "path", "pattern", "url", "question")
_PATTERN = 300


def _ts(info: Mapping[str, Any]) -> float | None:
    created = as_obj(info.get("time")).get("created")
    return created / 1000.0 if isinstance(created, int | float) and not isinstance(created, bool) else None


@dataclass
class ClaudeTail:
    """Where reading one transcript got to, and the messages read so far."""

    session_id: str
    path: str
    offset: int = 0  # bytes read, up to the end of the last whole line
    lines: int = 0
    messages: list[RawJson] = field(default_factory=list)
    usage: dict[str, list[Any]] = field(default_factory=dict)
    grew_at: float | None = None  # when the file last gave new lines
    bad_lines: int = 0
    subagent: bool = False  # a subagent's own file: its lines are all sidechain, all its own
    changed_from: int | None = None  # the first message new or changed since `take_changed`

    def feed(self, data: bytes, now: float) -> int:
        """Read the bytes that follow ``offset``; returns how many lines were new."""
        got = read_lines(
            data, name=self.path, session_id=self.session_id, lines_before=self.lines, skip=_SKIP
        )
        self.offset += got.consumed
        self.lines += got.lines
        self.bad_lines += sum(1 for e in got.errors if e.error_kind == "malformed")
        # sidechain lines kept inline (CLI 1.0.x) are subagents' own: not this session's state
        objs = got.objects if self.subagent else [o for o in got.objects if not o.get("isSidechain")]
        if got.lines:
            self.grew_at = now
        if not objs:
            return got.lines
        # only the newest answer can go on in the new lines (one line per content block):
        # it is handed back to the reader, with what came after it, and rebuilt with them
        start = _last_assistant(self.messages)
        head = self.messages[start:] if start is not None else []
        ids = {str(as_obj(m.get("info")).get("id")) for m in head}
        prior = Prior(head, {k: v for k, v in self.usage.items() if k in ids})
        built = build_messages(objs, self.session_id, prior)
        first = start if start is not None else len(self.messages)
        self.changed_from = first if self.changed_from is None else min(self.changed_from, first)
        if start is not None:
            del self.messages[start:]
        self.messages.extend(built.messages)
        self.usage.update(built.usage)
        return got.lines


def _last_assistant(messages: Sequence[Mapping[str, Any]]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if as_obj(messages[i].get("info")).get("role") == "assistant":
            return i
    return None


def totals(messages: Sequence[Mapping[str, Any]]) -> tuple[dict[str, int], float, int]:
    """Tokens by kind, cost and answers so far (each answer's usage counted once)."""
    tokens = {"input": 0, "output": 0, "reasoning": 0, "cache_read": 0, "cache_write": 0}
    cost, turns = 0.0, 0
    for m in messages:
        info = as_obj(m.get("info"))
        if info.get("role") != "assistant":
            continue
        turns += 1
        t = as_obj(info.get("tokens"))
        cache = as_obj(t.get("cache"))
        tokens["input"] += int(t.get("input") or 0)
        tokens["output"] += int(t.get("output") or 0)
        tokens["cache_read"] += int(cache.get("read") or 0)
        tokens["cache_write"] += int(cache.get("write") or 0)
        c = info.get("cost")
        cost += float(c) if isinstance(c, int | float) and not isinstance(c, bool) else 0.0
    return tokens, cost, turns


@dataclass(frozen=True)
class AgentSeen:
    """One session as `claude agents --json` lists it."""

    session_id: str
    status: str  # busy, idle, waiting ("needs input"), or "" when the CLI did not say
    waiting_for: str | None = None
    pid: int | None = None
    name: str | None = None


@dataclass(frozen=True)
class ClaudeState:
    state: str  # one of tower.live.STATES
    since: float | None
    reason: str = ""
    tool: str | None = None
    tool_since: float | None = None
    permission: str | None = None  # what it needs input for: a tool's name, or "question"
    patterns: tuple[str, ...] = ()
    asked_at: float | None = None
    request_id: str | None = None  # the tool call waiting
    attempt: int = 0


def _patterns(inp: Mapping[str, Any]) -> tuple[str, ...]:
    out = [str(inp[k])[:_PATTERN] for k in _PATTERN_KEYS if isinstance(inp.get(k), str) and inp[k]]
    for q in inp.get("questions") or [] if isinstance(inp.get("questions"), list) else []:
        if isinstance(as_obj(q).get("question"), str):
            out.append(str(as_obj(q)["question"])[:_PATTERN])
    return tuple(out[:3])


def _moved_on(info: Mapping[str, Any], m: Mapping[str, Any]) -> bool:
    claude = as_obj(info.get("claude"))
    if info.get("role") == "system":
        return claude.get("subtype") == "api_error"
    if info.get("role") != "user" or claude.get("isMeta"):
        return False
    return any(p.get("type") == "text" for p in m.get("parts") or [])


def _pending(messages: Sequence[Mapping[str, Any]]) -> list[tuple[RawJson, float | None]]:
    """The tool calls of the newest answer that have no result yet, with their times."""
    start = _last_assistant(messages)
    if start is None:
        return []
    mid = as_obj(messages[start].get("info")).get("id")
    calls: list[tuple[RawJson, float | None]] = []
    done: set[str] = set()
    for m in messages[start:]:
        info = as_obj(m.get("info"))
        if _moved_on(info, m):
            return []  # a new prompt (or a model call failing) after the calls: they were left
        for p in m.get("parts") or []:
            if info.get("role") == "assistant" and info.get("id") == mid and p.get("type") == "tool_use":
                calls.append((dict(p), _ts(info)))
            elif p.get("type") == "tool_result":
                done.add(str(p.get("tool_use_id")))
    return [(c, t) for c, t in calls if str(c.get("id")) not in done]


def _last_talk(messages: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The newest user or assistant message, or an API error the CLI is retrying after it."""
    for m in reversed(messages):
        info = as_obj(m.get("info"))
        role = info.get("role")
        if role in ("user", "assistant"):
            return as_obj(m)
        if role == "system" and as_obj(info.get("claude")).get("subtype") == "api_error":
            return as_obj(m)
    return None


def _text(m: Mapping[str, Any]) -> str:
    return " ".join(str(p.get("text", "")) for p in m.get("parts") or [] if p.get("type") == "text")


def derive(messages: Sequence[Mapping[str, Any]], agent: AgentSeen | None = None) -> ClaudeState:
    """What the session does now; ``agent``: the CLI's own word, when it lists the session."""
    pending = _pending(messages)
    if pending:
        call, at = pending[0]
        name = str(call.get("name") or "tool")
        pats = _patterns(as_obj(call.get("input")))
        waiting = agent is not None and agent.status == "waiting"
        if waiting or name in QUESTION_TOOLS:
            what = "question" if name in QUESTION_TOOLS else name
            why = (agent.waiting_for if agent is not None and agent.waiting_for else "") or (
                "a question to the user" if what == "question" else f"permission to run {name}"
            )
            return ClaudeState(
                "waiting_permission",
                at,
                f"needs input: {why}",
                permission=what,
                patterns=pats,
                asked_at=at,
                request_id=str(call.get("id") or "") or None,
            )
        return ClaudeState("running_tool", at, tool=name, tool_since=at, patterns=pats)
    if agent is not None and agent.status == "waiting":  # a dialog no line shows (an MCP form…)
        what = agent.waiting_for or "input"
        return ClaudeState(
            "waiting_permission", None, f"needs input: {what}", permission="dialog", patterns=(what,)
        )
    last = _last_talk(messages)
    if last is None:
        return ClaudeState("busy" if agent is not None and agent.status == "busy" else "idle", None)
    info = as_obj(last.get("info"))
    at = _ts(info)
    if info.get("role") == "system":
        part = as_obj((last.get("parts") or [{}])[0])
        n = part.get("retryAttempt", 0)
        err = as_obj(part.get("error"))
        text = str(err.get("formatted") or err.get("message") or part.get("error") or "the API failed")
        attempt = n if isinstance(n, int) and not isinstance(n, bool) else 0
        return ClaudeState("retrying", at, text[:300], attempt=attempt)
    if info.get("role") == "user":
        if _text(last).startswith(_INTERRUPTED):
            return ClaudeState("interrupted", at, "interrupted by the user")
        return ClaudeState("busy", at)
    err = as_obj(info.get("error"))
    if err:
        return ClaudeState(
            "errored", at, str(as_obj(err.get("data")).get("message") or err.get("name"))[:300]
        )
    if info.get("finish") in _DONE or (agent is not None and agent.status == "idle"):
        return ClaudeState("idle", at)
    return ClaudeState("busy", at)  # an answer still being written
