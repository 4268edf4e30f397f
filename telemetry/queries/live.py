"""Read the live view: what every followed session is doing now, one explained sentence per
session, its tree so far, counts per state. One typed model serves the API and `--json`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel
from sqlmodel import Session, col, func, or_, select

from telemetry.queries.finding_text import describe_all
from telemetry.queries.live_search import live_where
from telemetry.queries.live_stale import NO_WATCHER, no_watcher_reason, unfollowed
from telemetry.queries.models import stored_tokens
from telemetry.store.live_models import LiveSession
from telemetry.store.models import SessionIndex
from telemetry.timeutil import as_utc
from tower.claude_source import is_claude_server
from tower.live import STATES

__all__ = [
    "LOUDEST_FIRST",
    "LiveAsk",
    "LiveChange",
    "LivePage",
    "LiveSessionOut",
    "age_text",
    "explain",
    "get_live",
    "list_live",
    "live_change",
    "live_counts",
    "live_out",
    "live_tree",
    "mark_archived",
    "opencode_text",
]

# Sorting a board: what needs a person first (an ask nobody answers), then what may be stuck.
LOUDEST_FIRST = (
    "waiting_permission",
    "retrying",
    "unknown",
    "running_tool",
    "compacting",
    "busy",
    "errored",
    "interrupted",
    "idle",
    "deleted",
)
_RANK = {s: i for i, s in enumerate(LOUDEST_FIRST)}
_NEEDS = {"question": "a question to the user", "dialog": "a dialog"}  # what a Claude session waits on
MAX_LIVE = 1000


class LiveAsk(BaseModel):
    permission: str
    patterns: list[str]
    request_id: str | None
    asked_at: datetime | None
    waited_s: float | None


class LiveSessionOut(BaseModel):
    server: str
    generation: int | None = None  # the OpenCode its server runs: 1 or 2 (None: not probed yet)
    server_version: str | None = None
    session_id: str
    root_session_id: str | None
    parent_session_id: str | None
    title: str | None
    agent: str | None
    model: str | None
    directory: str | None
    state: str
    state_since: datetime
    state_age_s: float
    reason: str | None
    retry_attempt: int
    retry_next_at: datetime | None
    ask: LiveAsk | None
    tool: str | None
    tool_since: datetime | None
    last_activity_at: datetime | None
    inactive_s: float | None
    turns: int
    tokens: dict[str, int]
    cost_usd: float
    verdict: str
    worst_detector: str | None
    findings: list[dict[str, Any]]
    cycle_id: str | None
    driver: str | None
    updated_at: datetime
    explanation: str
    archived: bool = False  # an archive of the session exists too (an earlier quiet moment)
    source: Literal["opencode", "claude_code"] = "opencode"  # claude_code: a transcript followed


class LiveChange(LiveSessionOut):
    """A live row whose state changed, as `octel watch --json` prints it: the API's live row
    and the state it left."""

    previous_state: str | None


class LivePage(BaseModel):
    items: list[LiveSessionOut]
    counts: dict[str, int]


def opencode_text(r: LiveSessionOut) -> str:
    """What the session's server runs, for a column: its version, else its generation."""
    if r.server_version:
        return r.server_version
    return f"{r.generation}.x" if r.generation else "-"


def age_text(seconds: float | None) -> str:
    """9m 40s, 2h 5m, 3d 4h: two units at most."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    for unit, size, sub, subsize in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if s >= size:
            rest = (s % size) // subsize
            return f"{s // size}{unit}" + (f" {rest}{sub}" if rest else "")
    return f"{s}s"


def _age(t: datetime | None, now: datetime) -> float | None:
    return (now - as_utc(t)).total_seconds() if t is not None else None


def explain(r: LiveSessionOut) -> str:
    """One sentence for a person: what the session does, for how long, and who runs it."""
    age = age_text(r.state_age_s)
    if r.state == "waiting_permission" and r.ask is not None and r.source == "claude_code":
        what = _NEEDS.get(r.ask.permission, f"permission for {r.ask.permission}")
        pats = ", ".join(f"`{p}`" for p in r.ask.patterns[:3])
        text = f"needs input for {age_text(r.ask.waited_s)}: {what}" + (f" ({pats})" if pats else "")
    elif r.state == "waiting_permission" and r.ask is not None:
        pats = ", ".join(f"`{p}`" for p in r.ask.patterns[:3])
        text = f"waiting {age_text(r.ask.waited_s)} on a {r.ask.permission} ask"
        text += (f" ({pats})" if pats else "") + ", no reply"
    elif r.state == "retrying":
        text = f"retrying the model for {age}, attempt {r.retry_attempt}"
        text += f" ({r.reason})" if r.reason else ""
    elif r.state == "running_tool":
        text = f"running {r.tool or 'a tool'} for {age}"
    elif r.state == "busy":
        text = f"busy for {age}"
        if r.inactive_s is not None:
            text += f", last activity {age_text(r.inactive_s)} ago"
    elif r.state == "unknown" and r.reason and r.reason.startswith(NO_WATCHER):
        text = f"unknown ({r.reason}, {age} ago)"
    elif r.state in ("errored", "interrupted", "unknown"):
        text = f"{r.state} for {age}" + (f": {r.reason}" if r.reason else "")
    else:
        text = f"{r.state} for {age}"
    if r.verdict != "healthy" and r.worst_detector:
        text += f"; live verdict {r.verdict} ({r.worst_detector})"
    if r.cycle_id:
        text += f"; cycle {r.cycle_id} of driver {r.driver}"
    return text


def live_out(x: LiveSession, now: datetime, no_watcher_since: datetime | None = None) -> LiveSessionOut:
    """The stored row as every reader sees it (the API, `--json`, `octel watch --json`); with
    ``no_watcher_since`` (its server's lease ran out then) it is ``unknown``: what the row
    says was true when the last watcher saw it, not now."""
    state, since, reason = x.state, x.state_since, x.state_reason
    if no_watcher_since is not None:
        state, since, reason = "unknown", no_watcher_since, no_watcher_reason(no_watcher_since)
    ask = None
    if state == "waiting_permission" and x.permission:
        ask = LiveAsk(
            permission=x.permission,
            patterns=list(x.permission_patterns or []),
            request_id=x.permission_request_id,
            asked_at=as_utc(x.permission_asked_at) if x.permission_asked_at else None,
            waited_s=_age(x.permission_asked_at, now),
        )
    out = LiveSessionOut(
        server=x.server,
        generation=x.generation,
        server_version=x.server_version,
        session_id=x.session_id,
        root_session_id=x.root_session_id,
        parent_session_id=x.parent_session_id,
        title=x.title,
        agent=x.agent,
        model=x.model,
        directory=x.directory,
        state=state,
        state_since=as_utc(since),
        state_age_s=_age(since, now) or 0.0,
        reason=reason,
        retry_attempt=x.retry_attempt,
        retry_next_at=as_utc(x.retry_next_at) if x.retry_next_at else None,
        ask=ask,
        tool=x.tool if state == "running_tool" else None,
        tool_since=as_utc(x.tool_since) if x.tool_since and state == "running_tool" else None,
        last_activity_at=as_utc(x.last_activity_at) if x.last_activity_at else None,
        inactive_s=_age(x.last_activity_at, now),
        turns=x.turns,
        tokens=stored_tokens(x),
        cost_usd=x.cost_usd,
        verdict=x.verdict,
        worst_detector=x.worst_detector,
        # said as the archive's are: one sentence and the evidence named (no messages here)
        findings=describe_all(x.findings or [], None),
        cycle_id=x.cycle_id,
        driver=x.driver,
        updated_at=as_utc(x.updated_at),
        explanation="",
        source="claude_code" if is_claude_server(x.server) else "opencode",
    )
    out.explanation = explain(out)
    return out


def live_change(x: LiveSession, previous_state: str | None, now: datetime) -> LiveChange:
    return LiveChange(**dict(live_out(x, now)), previous_state=previous_state)


def _loudest(rows: Sequence[LiveSessionOut]) -> list[LiveSessionOut]:
    return sorted(rows, key=lambda r: (_RANK.get(r.state, 99), r.state_since, r.session_id))


def live_counts(db: Session, now: datetime) -> dict[str, int]:
    """Sessions per state (every state named, zeros included); the sessions of a server nobody
    follows are ``unknown``."""
    counts: dict[str, int] = dict.fromkeys(STATES, 0)
    gone = unfollowed(db, now)
    q = select(LiveSession.server, LiveSession.state, func.count()).group_by(
        LiveSession.server, LiveSession.state
    )
    for server, state, n in db.exec(q):
        key = "unknown" if server in gone else state
        counts[key] = counts.get(key, 0) + n
    return counts


def mark_archived(db: Session, rows: list[LiveSessionOut]) -> list[LiveSessionOut]:
    """Set `archived` on each row: whether the index holds an archive of the session too."""
    ids = [r.session_id for r in rows]
    if ids:
        q = select(SessionIndex.session_id).where(col(SessionIndex.session_id).in_(ids))
        have = set(db.exec(q))
        for r in rows:
            r.archived = r.session_id in have
    return rows


def list_live(
    db: Session,
    now: datetime,
    *,
    state: str | None = None,
    server: str | None = None,
    session_id: str | None = None,
    q: str | None = None,
    limit: int = MAX_LIVE,
) -> LivePage:
    """Live sessions, loudest first (unanswered asks, then the longest stalls); with `q`, those
    the query names (`live_search`)."""
    gone = unfollowed(db, now)
    stmt = select(LiveSession)
    if state is not None:  # a row of a server nobody follows reads unknown, whatever it stored
        stmt = stmt.where(or_(col(LiveSession.state) == state, col(LiveSession.server).in_(list(gone))))
    if server is not None:
        stmt = stmt.where(LiveSession.server == server)
    if session_id is not None:
        stmt = stmt.where(LiveSession.session_id == session_id)
    if q:
        stmt = stmt.where(live_where(q))
    found = db.exec(stmt.order_by(col(LiveSession.state_since)).limit(limit))
    rows = [live_out(x, now, gone.get(x.server)) for x in found]
    if state is not None:  # a server nobody follows has only unknown rows
        rows = [r for r in rows if r.state == state]
    return LivePage(items=_loudest(mark_archived(db, rows)), counts=live_counts(db, now))


def get_live(db: Session, session_id: str, now: datetime) -> LiveSessionOut | None:
    """The live row of a session (the newest, if several servers reported it)."""
    q = select(LiveSession).where(LiveSession.session_id == session_id)
    row = db.exec(q.order_by(col(LiveSession.updated_at).desc())).first()
    return live_out(row, now, unfollowed(db, now).get(row.server)) if row is not None else None


def live_tree(db: Session, session_id: str, now: datetime) -> list[tuple[int, LiveSessionOut]]:
    """(depth, row) of every live session in the tree of ``session_id``, parents before their
    children; empty when the session is not live."""
    me = get_live(db, session_id, now)
    if me is None:
        return []
    root = me.root_session_id or me.session_id
    q = select(LiveSession).where(LiveSession.server == me.server, LiveSession.root_session_id == root)
    gone = unfollowed(db, now).get(me.server)
    rows = {x.session_id: live_out(x, now, gone) for x in db.exec(q.limit(MAX_LIVE))}
    rows.setdefault(me.session_id, me)
    kids: dict[str, list[LiveSessionOut]] = {}
    tops: list[LiveSessionOut] = []
    for r in rows.values():
        p = r.parent_session_id
        if p is not None and p in rows and p != r.session_id:
            kids.setdefault(p, []).append(r)
        else:
            tops.append(r)
    out: list[tuple[int, LiveSessionOut]] = []
    seen: set[str] = set()
    stack = [(0, r) for r in sorted(tops, key=lambda r: r.session_id, reverse=True)]
    while stack:
        depth, r = stack.pop()
        if r.session_id in seen:
            continue
        seen.add(r.session_id)
        out.append((depth, r))
        children = sorted(kids.get(r.session_id, []), key=lambda c: c.session_id, reverse=True)
        stack += [(depth + 1, c) for c in children]
    return out
