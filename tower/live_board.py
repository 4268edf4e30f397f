"""The live board of one OpenCode server: every session the watcher sees, what it is doing now
and since when, its usage so far and its live findings (pure: fed events and polls).

`snapshot()` returns a `LiveRow` for each session that changed since the last call (or whose
findings may have, such as a wait that keeps growing), so the store is written only for what
moved. Nothing here walks every session: the changed and active sets are kept as events come.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict

from archiver.pricing import message_cost
from archiver.shape import as_obj
from detectors.findings import VERDICTS, FindingDict
from detectors.model import StatusType
from tower.live import Facts, LiveState, apply, derive, set_status
from tower.live_probe import SessionProbe

__all__ = ["LiveBoard", "LiveRow"]

_QUIET_STATES = ("idle", "interrupted", "errored", "deleted", "unknown")
_REFRESH_S = 5.0  # findings of a session that keeps waiting are refreshed this often
_START_S = 30.0  # a prompt not yet answered by a busy status holds its tree this long
_NOT_LISTED = "no longer listed by the server (restarted, or deleted while unwatched)"


@dataclass(frozen=True)
class LiveRow:
    server: str
    session_id: str
    root_session_id: str | None
    parent_session_id: str | None
    title: str | None
    agent: str | None
    model: str | None
    directory: str | None
    state: str
    state_since: float
    reason: str
    previous_state: str | None
    retry_attempt: int
    retry_next_at: float | None
    permission: str | None
    permission_patterns: tuple[str, ...]
    permission_request_id: str | None
    permission_asked_at: float | None
    tool: str | None
    tool_since: float | None
    last_activity_at: float | None
    turns: int
    tokens: Mapping[str, int]
    cost_usd: float
    verdict: str
    findings: tuple[FindingDict, ...]
    seen_at: float
    generation: int | None = None  # the OpenCode the server runs: 1 or 2 (None until probed)
    server_version: str | None = None


_TOKENS = ("input", "output", "reasoning", "cache_read", "cache_write")
_Kept = Literal["title", "parentID", "directory", "agent"]
_KEPT: tuple[_Kept, ...] = ("title", "parentID", "directory", "agent")


class _Shown(TypedDict, total=False):
    """What a row shows of its session: the server's own fields as it sent them, and the model
    as ``provider/model``."""

    title: Any
    parentID: Any
    directory: Any
    agent: Any
    model: str


@dataclass
class _Session:
    first_seen: float
    facts: Facts = field(default_factory=Facts)
    probe: SessionProbe = field(default_factory=SessionProbe)
    info: _Shown = field(default_factory=lambda: _Shown())
    usage: dict[str, tuple[int, int, int, int, int, float]] = field(default_factory=dict)
    totals: list[float] = field(default_factory=lambda: [0, 0, 0, 0, 0, 0.0])
    shown: tuple[str, float] | None = None  # state and since, as last reported
    refreshed: float = 0.0
    prompts: set[str] = field(default_factory=set)  # user messages seen


def _i(v: object) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else 0


def _usage(info: Mapping[str, Any]) -> tuple[int, int, int, int, int, float]:
    t = as_obj(info.get("tokens"))
    cache = as_obj(t.get("cache"))
    c = message_cost(info)  # a cost the server did not record is priced as the archive prices it
    return (
        _i(t.get("input")),
        _i(t.get("output")),
        _i(t.get("reasoning")),
        _i(cache.get("read")),
        _i(cache.get("write")),
        c,
    )


class LiveBoard:
    def __init__(self, server: str, root_of: Callable[[str], str | None] = lambda _s: None) -> None:
        self.server = server
        self._root_of = root_of
        self.sessions: dict[str, _Session] = {}
        self._changed: set[str] = set()
        self.active: set[str] = set()  # sessions whose last state is not a quiet one
        self._starting: dict[str, float] = {}  # prompted, not busy yet -> when prompted
        self._behind: set[str] = set()  # findings not counting the newest parts in flight yet
        self.fresh: list[str] = []  # sessions first heard of, until the watcher journals them
        self.ignored_events = 0
        self.generation: int | None = None
        self.server_version: str | None = None
        # told when a session's spend grows: the act loop checks budgets then, not a tick later
        self.on_spend: Callable[[], None] | None = None

    def about(self, generation: int, version: str | None) -> None:
        """What the server runs, once its probe answered; every row says it from then on."""
        if (generation, version) != (self.generation, self.server_version):
            self.generation, self.server_version = generation, version
            self._changed |= set(self.sessions)

    def _get(self, sid: str, now: float) -> _Session:
        s = self.sessions.get(sid)
        if s is None:
            s = self.sessions[sid] = _Session(first_seen=now)
            self.fresh.append(sid)
            self._changed.add(sid)  # a row for every session heard of, whatever the event said
        return s

    # -- inputs -----------------------------------------------------------------------------
    def on_event(self, event: Mapping[str, Any], now: float) -> None:
        kind = event.get("type")
        p = as_obj(event.get("properties")) or as_obj(event.get("data"))
        info = as_obj(p.get("info"))
        sid = p.get("sessionID")
        if not isinstance(sid, str) and isinstance(kind, str) and kind.startswith("session."):
            sid = info.get("id")
        if not isinstance(sid, str) or not sid:
            self.ignored_events += 1
            return
        s = self._get(sid, now)
        f = s.facts
        before = (f.status, tuple(f.asks))
        if not apply(f, event, now) and kind not in ("session.created", "session.updated", "session.diff"):
            self.ignored_events += 1
            return
        self._changed.add(sid)
        if kind in ("session.created", "session.updated") and info.get("id") == sid:
            for k in _KEPT:
                if k in info:
                    s.info[k] = info.get(k)
            model = as_obj(info.get("model"))
            if model.get("id"):
                s.info["model"] = f"{model.get('providerID', '')}/{model['id']}".lstrip("/")
        elif kind == "message.updated":
            self._message(s, info)
            # a new prompt starts a run; OpenCode also updates a prompt after its run went idle
            # (its diff summary), which starts nothing
            if info.get("role") == "user" and info.get("id") not in s.prompts:
                s.prompts.add(str(info.get("id")))
                if f.status == "idle":
                    self._starting[sid] = now
        elif kind == "message.part.updated":
            s.probe.part(as_obj(p.get("part")))
        elif kind in ("permission.asked", "permission.v2.asked"):
            ask = f.asks.get(str(p.get("id")))
            if ask is not None:
                s.probe.asked(ask, tuple(f.asks))
        elif kind in ("permission.replied", "permission.v2.replied"):
            s.probe.replied(str(p.get("requestID") or ""), str(p.get("reply") or ""), now)
        if (f.status, tuple(f.asks)) != before:
            self._feed_status(s, now)
            if f.status != "idle":
                self._starting.pop(sid, None)

    def _message(self, s: _Session, info: Mapping[str, Any]) -> None:
        mid = info.get("id")
        if not isinstance(mid, str):
            return
        if info.get("role") == "assistant":
            new = _usage(info)
            old = s.usage.get(mid, (0, 0, 0, 0, 0, 0.0))
            s.usage[mid] = new
            s.totals = [a + b - c for a, b, c in zip(s.totals, new, old, strict=True)]
            if new != old and self.on_spend is not None:
                self.on_spend()
            if info.get("agent"):
                s.info["agent"] = info.get("agent")
            if info.get("modelID"):
                s.info["model"] = f"{info.get('providerID', '')}/{info['modelID']}".lstrip("/")
        s.probe.message(info)

    def _feed_status(self, s: _Session, now: float) -> None:
        f = s.facts
        kind: StatusType = "retry" if f.status == "retry" else "busy" if f.status == "busy" else "idle"
        s.probe.status(kind, f.attempt, now, f.retry_message, tuple(f.asks))

    def on_status_poll(self, status: Mapping[str, Any], now: float) -> None:
        """``GET /session/status``: listed sessions are busy or retrying, the rest idle."""
        for sid, st in status.items():
            if isinstance(sid, str):
                self._poll_status(sid, as_obj(st), now)
        for sid in [x for x in self.active if x not in status]:
            self._poll_status(sid, {"type": "idle"}, now)
        for sid, s in self.sessions.items():
            if s.facts.unknown and sid not in status:
                self._poll_status(sid, {"type": "idle"}, now)

    def _poll_status(self, sid: str, st: Mapping[str, Any], now: float) -> None:
        s = self._get(sid, now)
        before = (s.facts.status, s.facts.attempt, s.facts.unknown)
        set_status(s.facts, st, now)
        if (s.facts.status, s.facts.attempt, s.facts.unknown) != before:
            self._changed.add(sid)
            self._feed_status(s, now)

    def on_permissions_poll(self, pending: Iterable[Mapping[str, Any]], now: float) -> None:
        """``GET /permission``: every ask pending now; a known ask not listed was answered."""
        listed: dict[str, set[str]] = {}
        for p in pending:
            sid, rid = p.get("sessionID"), p.get("id")
            if isinstance(sid, str) and isinstance(rid, str):
                listed.setdefault(sid, set()).add(rid)
                if rid not in self._get(sid, now).facts.asks:
                    self.on_event({"type": "permission.asked", "properties": dict(p)}, now)
        for sid in list(self.active):
            for rid in list(self.sessions[sid].facts.asks):
                if rid not in listed.get(sid, set()):
                    ev = {"type": "permission.replied", "properties": {"sessionID": sid, "requestID": rid}}
                    self.on_event(ev, now)

    def on_session_list(self, listed: Iterable[str], now: float) -> None:
        """The server's session list after a (re)connect: a session it no longer has is gone
        from our sight (a server restarted on another store, or deleted while we were away)."""
        have = set(listed)
        for sid in [x for x in self.active if x not in have]:  # the list may be cut: only active ones
            self._lose(sid, self.sessions[sid], _NOT_LISTED, now)

    def lost(self, reason: str, now: float) -> None:
        """The server cannot be followed (stream closed, unreachable): every session it had
        shows `unknown` with the reason until the server answers again."""
        for sid, s in self.sessions.items():
            if s.facts.deleted_at is None and derive(s.facts).state != "idle":
                self._lose(sid, s, reason, now)

    def _lose(self, sid: str, s: _Session, reason: str, now: float) -> None:
        s.facts.unknown, s.facts.unknown_at = reason, now
        self._changed.add(sid)

    def again(self, sids: Iterable[str]) -> None:
        """Rows that could not be stored: in the next snapshot again."""
        self._changed |= {sid for sid in sids if sid in self.sessions}

    def drop(self, sids: Iterable[str]) -> None:
        for sid in sids:
            self.sessions.pop(sid, None)
            self._changed.discard(sid)
            self.active.discard(sid)
            self._starting.pop(sid, None)
            self._behind.discard(sid)

    def running(self, now: float) -> set[str]:
        """Sessions whose run has not finished: an active state, or a prompt sent moments ago
        that the server has not started on yet (a cold server takes seconds to go busy)."""
        for sid in [x for x, t in self._starting.items() if now - t >= _START_S]:
            del self._starting[sid]
        return self.active | set(self._starting)

    # -- outputs ----------------------------------------------------------------------------
    def snapshot(self, now: float) -> list[LiveRow]:
        """Rows of the sessions that changed, and of active ones due a findings refresh."""
        due = {sid for sid in self.active if now - self.sessions[sid].refreshed >= _REFRESH_S}
        due |= {sid for sid in self._behind if self.sessions[sid].probe.behind(now)}
        todo, self._changed = self._changed | due, set()
        return [self._row(sid, self.sessions[sid], now) for sid in sorted(todo) if sid in self.sessions]

    def _row(self, sid: str, s: _Session, now: float) -> LiveRow:
        st: LiveState = derive(s.facts)
        prev = s.shown[0] if s.shown else None
        since = s.shown[1] if s.shown and s.shown[0] == st.state else (st.since or now)
        s.shown, s.refreshed = (st.state, since), now
        if st.state in _QUIET_STATES:
            self.active.discard(sid)
        else:
            self.active.add(sid)
        findings = tuple(s.probe.findings(now, tuple(s.facts.asks)))
        if s.probe.held_back():
            self._behind.add(sid)
        else:
            self._behind.discard(sid)
        ranks = [VERDICTS.index(v) for f in findings if (v := f.get("verdict")) in VERDICTS]
        verdict = VERDICTS[max(ranks, default=0)]
        t = s.totals
        return LiveRow(
            server=self.server,
            session_id=sid,
            root_session_id=self._root_of(sid),
            parent_session_id=s.info.get("parentID"),
            title=s.info.get("title"),
            agent=s.info.get("agent"),
            model=s.info.get("model"),
            directory=s.info.get("directory"),
            state=st.state,
            state_since=since,
            reason=st.reason,
            previous_state=prev,
            retry_attempt=st.attempt,
            retry_next_at=st.next_try,
            permission=st.ask.permission if st.ask else None,
            permission_patterns=st.ask.patterns if st.ask else (),
            permission_request_id=st.ask.request_id if st.ask else None,
            permission_asked_at=st.ask.asked_at if st.ask else None,
            tool=st.tool.tool if st.tool else None,
            tool_since=st.tool.since if st.tool else None,
            last_activity_at=s.facts.last_activity_at,
            turns=len(s.usage),
            tokens={k: int(v) for k, v in zip(_TOKENS, t[:5], strict=True)},
            cost_usd=float(t[5]),
            verdict=verdict,
            findings=findings,
            seen_at=now,
            generation=self.generation,
            server_version=self.server_version,
        )
