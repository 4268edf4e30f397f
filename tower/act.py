"""Carry out an intent of `tower.actions` on a live OpenCode server, after checking it
still holds.

Between the decision and the request the session may move on: the ask answered (twice, even),
the session deleted, the run finished, the server restarted (pending asks and statuses live in
its memory). So before any request the watcher's own newest state is read again, then the
server is asked (`GET /session/{id}` with `GET /permission` or `GET /session/status`, both at
once: one round trip), then the watcher's state once more (events arrive while we wait); only
an intent that survives all three is sent. Every path returns a `Carried` saying what
happened, for the audit row.

On OpenCode 2 (``v2``) the same checks read ``/api/session/{id}``, its pending asks or forms
and ``/api/session/active``; an ask is rejected with ``{decision: "reject"}``, a form (a
question, ``frm_…``) is cancelled, and an abort is an ``interrupt``. A session whose execution
ended (V2 says how: its ``outcome``, e.g. failed once its bounded retries ran out) is not
acted on: that is an outcome, not a storm.

`recheck` and `send` are the two halves of `carry_out`, so that the caller can write the intent
to the audit between them: what was sent must be on record before the request leaves, not only
in the memory of a watcher that may die before the answer comes. `server_now` says what the
server shows of an intent a dead watcher left unfinished, for its audit row.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import orjson

from tower.actions import Intent, Outcome, SessionView
from tower.live import derive
from tower.live_board import LiveBoard

__all__ = ["Carried", "carry_out", "recheck", "request_of", "send", "server_now", "views_of"]

_TIMEOUT = httpx.Timeout(10.0, connect=5.0)
_ANSWER_CHARS = 300


@dataclass(frozen=True)
class Carried:
    intent: Intent
    outcome: Outcome
    detail: str  # one sentence: what was checked or sent and why this outcome
    status: int | None = None  # the server's HTTP status for the action request
    answer: str = ""  # the start of its body


def views_of(
    board: LiveBoard, now: float, *, findings: bool, root_of: Callable[[str], str | None] = lambda _s: None
) -> list[SessionView]:
    """What the board shows of every session not quiet now (findings only when a rule uses
    them: they cost a detector pass per session)."""
    out = []
    for sid in sorted(board.active):
        s = board.sessions.get(sid)
        if s is None:
            continue
        st = derive(s.facts)
        found = tuple(s.probe.findings(now, tuple(s.facts.asks))) if findings else ()
        asks = tuple(sorted((a.request_id, a.asked_at) for a in s.facts.asks.values()))
        out.append(
            SessionView(
                session_id=sid,
                state=st.state,
                root_session_id=root_of(sid),
                ask_id=st.ask.request_id if st.ask else None,
                permission=st.ask.permission if st.ask else None,
                patterns=st.ask.patterns if st.ask else (),
                asked_at=st.ask.asked_at if st.ask else None,
                retry_attempt=st.attempt,
                retry_message=s.facts.retry_message,
                findings=found,
                asks=asks,
                run_since=s.facts.busy_since,
                run_id=max(s.prompts) if s.prompts else None,  # ids ascend with time
            )
        )
    return out


def _moved_on(board: LiveBoard, it: Intent) -> str | None:
    """Why the watcher's newest state says the intent no longer holds, or None."""
    s = board.sessions.get(it.session_id)
    if s is None:
        return "the watcher no longer follows the session"
    f = s.facts
    st = derive(f)
    if st.state == "deleted":
        return "the session was deleted"
    if st.state == "unknown":
        return f"the watcher lost sight of the session ({st.reason})"
    if it.kind == "reject_ask":
        if it.request_id in f.replied:
            return "the ask was answered"
        if it.request_id not in f.asks:
            return "the ask is no longer pending (its run ended)"
    elif it.rule == "abort_retries_after" and st.state != "retrying":
        return f"no longer retrying (now {st.state})"
    elif st.state in ("idle", "interrupted", "errored"):
        return f"the run is over (now {st.state})"
    return None


Auth = tuple[str, str] | None


async def _get(http: httpx.AsyncClient, url: str, auth: Auth = None) -> tuple[int, Any]:
    r = await http.get(url, timeout=_TIMEOUT, auth=auth or httpx.USE_CLIENT_DEFAULT)
    try:
        return r.status_code, orjson.loads(r.content) if r.content else None
    except orjson.JSONDecodeError:
        return r.status_code, None


def _data(body: Any) -> Any:
    return body.get("data") if isinstance(body, dict) else None


async def _v2_moved_on(http: httpx.AsyncClient, base: str, it: Intent, auth: Auth) -> str | None:
    sid = it.session_id
    if it.kind == "reject_ask":
        what = "form" if str(it.request_id).startswith("frm_") else "permission"
        second = f"{base}/api/session/{sid}/{what}"
    else:
        second = f"{base}/api/session/active"
    # both at once: the re-check is one round trip, so the action leaves in the tick it was seen
    (code, body), (code2, body2) = await asyncio.gather(
        _get(http, f"{base}/api/session/{sid}", auth), _get(http, second, auth)
    )
    if code == 404:
        return "the server no longer has the session (deleted)"
    if it.kind == "reject_ask":
        listed = _data(body2)
        ids = {p.get("id") for p in listed if isinstance(p, dict)} if isinstance(listed, list) else None
        if code2 == 200 and ids is not None and it.request_id not in ids:
            return "the server no longer lists the ask (answered, or the server restarted)"
        return None
    outcome = (_data(body) or {}).get("outcome") if isinstance(_data(body), dict) else None
    running = _data(body2)
    if code2 == 200 and isinstance(running, dict) and sid not in running:
        if outcome:  # V2 ended it and says how (a failure after its last retry included)
            return f"the execution ended: outcome {outcome}"
        return "the server shows it idle (the run ended, or the server restarted)"
    return None


async def _server_moved_on(http: httpx.AsyncClient, base: str, it: Intent) -> str | None:
    second = f"{base}/permission" if it.kind == "reject_ask" else f"{base}/session/status"
    (code, _), (code2, listed) = await asyncio.gather(
        _get(http, f"{base}/session/{it.session_id}"), _get(http, second)
    )
    if code == 404:
        return "the server no longer has the session (deleted)"
    if it.kind == "reject_ask":
        ok = code2 == 200 and isinstance(listed, list)
        ids = {p.get("id") for p in listed if isinstance(p, dict)} if ok else None
        if ids is not None and it.request_id not in ids:
            return "the server no longer lists the ask (answered, or the server restarted)"
        return None
    if code2 == 200 and isinstance(listed, dict):
        now = listed.get(it.session_id)
        kind = now.get("type") if isinstance(now, dict) else "idle"
        if it.rule == "abort_retries_after" and kind != "retry":
            return f"the server shows it {kind}, no longer retrying"
        if kind == "idle":
            return "the server shows it idle (the run ended, or the server restarted)"
    return None


def _summary(r: httpx.Response) -> str:
    return r.text[:_ANSWER_CHARS]


async def recheck(
    http: httpx.AsyncClient,
    base_url: str,
    board: LiveBoard,
    it: Intent,
    *,
    v2: bool = False,
    auth: Auth = None,
) -> Carried | None:
    """None when the intent still holds, by the watcher and the server; else what happened
    instead (nothing sent). Never raises for server trouble. ``v2``: the server speaks OpenCode 2
    (``auth``: its Basic auth pair)."""
    base = base_url.rstrip("/")
    if (why := _moved_on(board, it)) is not None:
        return Carried(it, "skipped", why)
    if it.kind == "notify":
        return Carried(it, "notified", "logged and recorded; nothing sent to the server")
    try:
        why = await (_v2_moved_on(http, base, it, auth) if v2 else _server_moved_on(http, base, it))
    except httpx.HTTPError as exc:
        return Carried(it, "failed", f"could not re-check with the server ({type(exc).__name__}: {exc})")
    if why is None:
        why = _moved_on(board, it)  # events that arrived while we asked
    return Carried(it, "skipped", why) if why is not None else None


def request_of(it: Intent, v2: bool = False) -> str:
    """The request that carries ``it`` out, as the audit names it."""
    method, path, _ = _request(it, v2)
    return f"{method} {path}" + (" reject" if it.kind == "reject_ask" and method == "POST" else "")


async def send(
    http: httpx.AsyncClient, base_url: str, it: Intent, *, v2: bool = False, auth: Auth = None
) -> Carried:
    """The request itself, and what its answer says; never raises for server trouble."""
    base = base_url.rstrip("/")
    method, path, body = _request(it, v2)
    what = request_of(it, v2)
    try:
        r = await http.request(
            method, base + path, json=body, timeout=_TIMEOUT, auth=auth or httpx.USE_CLIENT_DEFAULT
        )
    except httpx.HTTPError as exc:
        return Carried(it, "failed", f"{what}: {type(exc).__name__}: {exc}")
    if r.status_code == 404:
        return Carried(it, "gone", f"{what}: the server no longer knew it", r.status_code, _summary(r))
    stopped = _interrupted(r) if v2 and it.kind != "reject_ask" else None
    if stopped is False:
        return Carried(it, "gone", f"{what}: nothing was running to interrupt", r.status_code, _summary(r))
    if 200 <= r.status_code < 300 and (stopped or r.content.strip() in (b"true", b"")):
        return Carried(it, "done", what, r.status_code, _summary(r))
    return Carried(it, "failed", f"{what}: unexpected answer", r.status_code, _summary(r))


async def carry_out(
    http: httpx.AsyncClient,
    base_url: str,
    board: LiveBoard,
    it: Intent,
    *,
    v2: bool = False,
    auth: Auth = None,
) -> Carried:
    """Re-check, then act; never raises for server trouble."""
    if (instead := await recheck(http, base_url, board, it, v2=v2, auth=auth)) is not None:
        return instead
    return await send(http, base_url, it, v2=v2, auth=auth)


async def server_now(
    http: httpx.AsyncClient, base_url: str, it: Intent, *, v2: bool = False, auth: Auth = None
) -> str:
    """One sentence: whether the server still shows ``it`` due (a re-check, nothing sent)."""
    base = base_url.rstrip("/")
    try:
        why = await (_v2_moved_on(http, base, it, auth) if v2 else _server_moved_on(http, base, it))
    except httpx.HTTPError as exc:
        return f"the server could not be asked ({type(exc).__name__})"
    return f"{why} now" if why else "the server still shows it due; not sent again"


def _interrupted(r: httpx.Response) -> bool | None:
    """V2's ``{"interrupted": bool}`` (None for any other answer)."""
    try:
        body = orjson.loads(r.content) if r.status_code == 200 else None
    except orjson.JSONDecodeError:
        return None
    flag = body.get("interrupted") if isinstance(body, dict) else None
    return flag if isinstance(flag, bool) else None


def _request(it: Intent, v2: bool) -> tuple[str, str, Any]:
    """(method, path, JSON body) of the action on this server's generation."""
    sid, rid = it.session_id, it.request_id
    if not v2:
        if it.kind == "reject_ask":
            return "POST", f"/permission/{rid}/reply", {"reply": "reject", "message": _message(it)}
        return "POST", f"/session/{sid}/abort", None
    if it.kind != "reject_ask":
        return "POST", f"/api/session/{sid}/interrupt", None
    if str(rid).startswith("frm_"):  # a question: cancelled, with the reason as its message
        return "DELETE", f"/api/session/{sid}/form/{rid}?{urlencode({'message': _message(it)})}", None
    return (
        "POST",
        f"/api/session/{sid}/permission/{rid}/reply",
        {"decision": "reject", "message": _message(it)},
    )


def _message(it: Intent) -> str:
    waited = it.evidence.get("waited_s")
    after = f" after {waited:.0f} s without an answer" if isinstance(waited, int | float) else ""
    return f"octel: rejected{after} (rule deny_asks_after)"
