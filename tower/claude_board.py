"""The live board of one Claude Code config folder: every transcript followed, what its session
does now and since when, its usage and live findings so far (pure: fed bytes and listings).

It gives the same `LiveRow` an OpenCode server's board gives, so the store, the console,
`sessions list --live`, `/api/live`, `why`, the metrics and the alerts read Claude Code
sessions as they read OpenCode ones. The rows' server is ``claude-code:<folder>``: that prefix
is how every reader tells a Claude Code row (`source: claude_code`).

`snapshot()` returns rows only for sessions that moved (new lines, a new word from
`claude agents --json`), and rescoring runs only on new messages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import orjson

from archiver.claude.tree import first_prompt
from archiver.cut import cut
from detectors.findings import VERDICTS, FindingDict
from tower.actions import SessionView
from tower.claude_source import CLAUDE_SERVER, claude_server, is_claude_server
from tower.claude_tail import AgentSeen, ClaudeState, ClaudeTail, derive, totals
from tower.live_board import LiveRow
from tower.live_messages import MAX_MESSAGES, LiveMessage, MessageBatch

__all__ = ["CLAUDE_SERVER", "ClaudeBoard", "claude_server", "is_claude_server", "parse_agents"]

_QUIET = ("idle", "interrupted", "errored", "deleted", "unknown")
_TITLE = 200
# the detectors read the whole stream so far (0.1 s for 3,000 messages): a session that keeps
# writing is rescored this often, and at once when its state changes
RESCORE_S = 5.0
Score = Callable[[Sequence[Mapping[str, Any]]], list[FindingDict]]


def parse_agents(text: str | bytes) -> dict[str, AgentSeen]:
    """`claude agents --json` (CLI 2.1.x): a JSON array of sessions, each with ``sessionId``,
    ``status`` (busy, idle, waiting) and, while waiting, ``waitingFor``; ValueError when the
    text is not such an array (a CLI without the command)."""
    try:
        got = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(got, list):
        raise ValueError("not a JSON array")
    out: dict[str, AgentSeen] = {}
    for item in got:
        if not isinstance(item, Mapping) or not isinstance(item.get("sessionId"), str):
            continue
        status = item.get("status")
        # a background job without a live process says only its state: blocked is waiting on input
        if not isinstance(status, str):
            status = {"blocked": "waiting", "working": "busy"}.get(str(item.get("state")), "")
        waiting = item.get("waitingFor")
        pid = item.get("pid")
        name = item.get("name")
        out[item["sessionId"]] = AgentSeen(
            session_id=item["sessionId"],
            status=status,
            waiting_for=str(waiting)[:200] if isinstance(waiting, str) and waiting else None,
            pid=pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
            name=str(name)[:200] if isinstance(name, str) else None,
        )
    return out


class _Shown(TypedDict, total=False):
    """What a row shows of its session, read from its transcript."""

    title: str
    model: str
    directory: str


@dataclass
class _Seen:
    tail: ClaudeTail
    parent: str | None = None  # the session a subagent works for
    shown: tuple[str, float] | None = None  # state and since, as last reported
    scored_at: int = -1  # messages count the findings were scored on
    scored_time: float = float("-inf")
    findings: tuple[FindingDict, ...] = ()
    kept_from: int = 0  # the oldest message position kept in the store
    state: ClaudeState | None = None
    info: _Shown = field(default_factory=lambda: _Shown())


class ClaudeBoard:
    def __init__(self, server: str, score: Score, *, forget_after: float = 3600.0) -> None:
        self.server = server
        self._score = score
        self.forget_after = forget_after
        self.seen: dict[str, _Seen] = {}
        self.agents: dict[str, AgentSeen] = {}
        self._changed: set[str] = set()
        self._behind: set[str] = set()  # findings not counting the newest messages yet

    # -- inputs -----------------------------------------------------------------------------
    def tail(self, session_id: str, path: str, parent: str | None = None) -> ClaudeTail:
        s = self.seen.get(session_id)
        if s is None:
            tail = ClaudeTail(session_id, path, subagent=parent is not None)
            s = self.seen[session_id] = _Seen(tail, parent)
        return s.tail

    def feed(self, session_id: str, path: str, data: bytes, now: float) -> int:
        """The bytes a transcript gained; returns the lines read."""
        n = self.tail(session_id, path).feed(data, now)
        if n:
            self._changed.add(session_id)
        return n

    def on_agents(self, listed: Mapping[str, AgentSeen]) -> None:
        """What the CLI lists now: a session whose word changed (or that left the list) moves."""
        for sid in set(listed) | set(self.agents):
            if listed.get(sid) != self.agents.get(sid) and sid in self.seen:
                self._changed.add(sid)
        self.agents = dict(listed)

    def touch(self) -> None:
        """Every session's row and kept messages are due again (the last write may not have
        landed)."""
        self._changed |= set(self.seen)
        for s in self.seen.values():
            s.tail.changed_from, s.kept_from = 0, 0

    def forget(self, now: float) -> list[str]:
        """Sessions silent for ``forget_after`` that the CLI does not list: dropped."""
        gone = [
            sid
            for sid, s in self.seen.items()
            if sid not in self.agents and now - (s.tail.grew_at or now) >= self.forget_after
        ]
        for sid in gone:
            del self.seen[sid]
            self._changed.discard(sid)
            self._behind.discard(sid)
        return gone

    # -- outputs ----------------------------------------------------------------------------
    def snapshot(self, now: float) -> list[LiveRow]:
        due = {
            sid for sid in self._behind if sid in self.seen and now - self.seen[sid].scored_time >= RESCORE_S
        }
        todo, self._changed = self._changed | due, set()
        self._behind -= due
        return [self._row(sid, self.seen[sid], now) for sid in sorted(todo) if sid in self.seen]

    def active(self) -> list[str]:
        return sorted(sid for sid, s in self.seen.items() if s.shown and s.shown[0] not in _QUIET)

    def active_roots(self) -> list[str]:
        """The trees running now (a subagent's is its session's)."""
        return sorted({self.seen[sid].parent or sid for sid in self.active()})

    def views(self) -> list[SessionView]:
        """The sessions running now, as the live rules and budgets read them."""
        out = []
        for sid in self.active():
            s = self.seen[sid]
            st = s.state
            out.append(
                SessionView(
                    session_id=sid,
                    state=s.shown[0] if s.shown else "idle",
                    root_session_id=s.parent or sid,
                    permission=st.permission if st else None,
                    patterns=st.patterns if st else (),
                    asked_at=st.asked_at if st else None,
                    findings=s.findings,
                )
            )
        return out

    def _info(self, s: _Seen) -> _Shown:
        msgs = s.tail.messages
        if "title" not in s.info and (prompt := first_prompt(msgs)):
            s.info["title"] = cut(prompt, _TITLE, "…")
        for m in reversed(msgs):
            info = m.get("info") or {}
            if info.get("role") == "assistant" and info.get("modelID") and info["modelID"] != "<synthetic>":
                s.info["model"] = f"anthropic/{info['modelID']}"
                break
        for m in reversed(msgs):
            if cwd := (m.get("info") or {}).get("claude", {}).get("cwd"):
                s.info["directory"] = str(cwd)
                break
        return s.info

    def _row(self, sid: str, s: _Seen, now: float) -> LiveRow:
        msgs = s.tail.messages
        agent = self.agents.get(sid)
        st = s.state = derive(msgs, agent)
        prev = s.shown[0] if s.shown else None
        since = s.shown[1] if s.shown and s.shown[0] == st.state else (st.since or now)
        s.shown = (st.state, since)
        if s.scored_at != len(msgs):
            if prev != st.state or now - s.scored_time >= RESCORE_S:
                s.findings, s.scored_at, s.scored_time = tuple(self._score(msgs)), len(msgs), now
                self._behind.discard(sid)
            else:
                self._behind.add(sid)
        ranks = [VERDICTS.index(v) for f in s.findings if (v := f.get("verdict")) in VERDICTS]
        tokens, cost, turns = totals(msgs)
        info = self._info(s)
        return LiveRow(
            server=self.server,
            session_id=sid,
            root_session_id=s.parent or sid,
            parent_session_id=s.parent,
            # the first prompt says more than the name the CLI derives from the folder
            title=info.get("title") or (agent.name if agent and agent.name else None),
            agent=None,
            model=info.get("model"),
            directory=info.get("directory"),
            state=st.state,
            state_since=since,
            reason=st.reason,
            previous_state=prev,
            retry_attempt=st.attempt,
            retry_next_at=None,
            permission=st.permission,
            permission_patterns=st.patterns if st.state == "waiting_permission" else (),
            permission_request_id=st.request_id,
            permission_asked_at=st.asked_at,
            tool=st.tool,
            tool_since=st.tool_since,
            last_activity_at=s.tail.grew_at,
            turns=turns,
            tokens=tokens,
            cost_usd=cost,
            verdict=VERDICTS[max(ranks, default=0)],
            findings=s.findings,
            seen_at=now,
        )

    def messages(self) -> MessageBatch:
        """The messages new or changed since the last call, as the console's live timeline
        reads them (the archive's shape); a session keeps its newest ``MAX_MESSAGES``."""
        out = MessageBatch()
        for sid, s in self.seen.items():
            t = s.tail
            if t.changed_from is None:
                continue
            low = max(0, len(t.messages) - MAX_MESSAGES)
            for i in range(max(t.changed_from, low), len(t.messages)):
                m = t.messages[i]
                info = m.get("info") or {}
                done = info.get("role") != "assistant" or bool(info.get("finish")) or i < len(t.messages) - 1
                mid = str(info.get("id") or f"line-{i}")
                out.upserts.append(LiveMessage(sid, mid, i, info.get("role"), done, m))
            for i in range(s.kept_from, low):  # fallen out of the newest: no longer kept live
                out.deletes.append((sid, str((t.messages[i].get("info") or {}).get("id") or f"line-{i}")))
            s.kept_from, t.changed_from = max(s.kept_from, low), None
        return out

    def paths(self) -> Iterable[tuple[str, ClaudeTail]]:
        return ((sid, s.tail) for sid, s in self.seen.items())
