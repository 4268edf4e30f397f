"""`octel why`: one verdict for why a session or cycle stopped, with the evidence behind it.

`decide` is pure: it weighs what the store and the archive say (detector findings, the cycle's
terminal state and error kind, the index row, the last turns, pending permission asks, retry
status) and returns one verdict. Strong signals win over weak ones: a stuck detector explains a
stop better than the timeout that ended it; a suspect finding only counts when the run did not
end cleanly (mixed signals read as healthy). `why` gathers the signals from the database and the
archive file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlmodel import Session, col, select

from archiver.convert import permissions_from_opencode, status_from_opencode
from archiver.shape import RawJson
from archiver.store import ArchiveStore
from detectors import REGISTRY
from detectors.findings import rank_key
from telemetry import vocabulary as words
from telemetry.queries.actions import budget_action
from telemetry.queries.cycle_fleet import cycle_fleet
from telemetry.queries.cycles import cycle_dict
from telemetry.queries.live import get_live
from telemetry.queries.sessions import get_session
from telemetry.queries.turns import open_archive, turns_of
from telemetry.queries.why_models import WhyAnswer
from telemetry.settings import Settings
from telemetry.store.archive_docs import reading_in
from telemetry.store.models import Cycle
from telemetry.timeutil import utcnow

__all__ = ["VERDICTS", "Signals", "decide", "why"]

# code -> what a person reads.
VERDICTS = {
    "completed": "completed",
    "timed_out": "timed out",
    "loop_detected": "loop detected",
    "permission_wait": "permission wait",
    "retries": "retries",
    "empty_completion": "empty completion",
    "aborted": "aborted",
    "error": "error",
    "running": "still running",
    "orphaned": "orphaned",
    "over_budget": "over budget",
}
DEFAULT_LONG_WORKER_S: float = Settings.model_fields["long_worker_seconds"].default
_CLEAN_FINISH = {"stop", "end_turn", "end-turn", "completed", "length"}


@dataclass(frozen=True)
class Signals:
    """Everything known about one stop, as plain data from the query library."""

    kind: str  # "session" or "cycle"
    ident: str
    session: Mapping[str, Any] | None = None
    findings: Sequence[Mapping[str, Any]] = ()
    cycle: Mapping[str, Any] | None = None
    turns: Sequence[Mapping[str, Any]] | None = None  # None: no archive data
    status_history: Sequence[Mapping[str, Any]] = ()  # normalised: {type, attempt}
    permission_events: Sequence[Mapping[str, Any]] = ()  # normalised: {kind, request_id, permission}
    archive_problem: str | None = None
    fleet: Mapping[str, Any] | None = None  # the open cycle's daemon: {daemon_state, reason}
    live: Mapping[str, Any] | None = None  # the session's live row: {session_id, state, explanation}
    budget: Mapping[str, Any] | None = (
        None  # the budget action on its tree: {budget, used, unit, action, outcome}
    )


@dataclass
class _Case:
    candidates: list[tuple[int, str, int]] = field(default_factory=list)  # (rank, code, evidence index)
    evidence: list[dict[str, str]] = field(default_factory=list)

    def note(self, source: str, detail: str, code: str | None = None, rank: int = 99) -> None:
        self.evidence.append({"source": source, "detail": detail})
        if code is not None:
            self.candidates.append((rank, code, len(self.evidence) - 1))


def _verdict(code: str) -> str:
    """What a person reads for a code; an add-on's own stop reason reads as its words."""
    return VERDICTS.get(code) or code.replace("_", " ")


def _text(*values: Any) -> str:
    return " ".join(str(v) for v in values if v)


def _pending_asks(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """Permissions asked and never answered, from normalised `{kind, request_id, permission}`."""
    asked: dict[str, str] = {}
    for e in events:
        rid = str(e.get("request_id") or "")
        if e.get("kind") == "asked":
            asked[rid] = str(e.get("permission") or "a tool")
        elif e.get("kind") == "replied":
            asked.pop(rid, None)
    return list(asked.values())


def _score(f: Mapping[str, Any]) -> float:
    v = f.get("score")
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0.0


def _findings(c: _Case, findings: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Note each finding; stuck ones become candidates now, suspect ones are returned."""
    suspect: list[tuple[str, str]] = []
    # worst first by the one rank the archive and the live board name their pattern by
    for f in sorted(
        findings, key=lambda f: rank_key(str(f.get("detector")), str(f.get("verdict")), _score(f))
    ):
        det, verdict = str(f.get("detector")), str(f.get("verdict"))
        if verdict == "healthy":
            continue
        spec = REGISTRY.spec(det)  # each detector registers the stop reason its findings explain
        code = spec.stop_reason if spec is not None else None
        detail = f"detector {det}: {verdict} (score {float(f.get('score') or 0):.2f})"
        start = f.get("start_index")
        if isinstance(start, int) and start >= 0:  # messages are numbered from 1 everywhere
            detail += f" from message {start + 1}"
        if verdict == "stuck" and code:
            c.note("finding", detail, code, rank=1)
        else:
            c.note("finding", detail)
            if code:
                suspect.append((code, detail))
    return suspect


def _open_cycle(c: _Case, cyc: Mapping[str, Any], fleet: Mapping[str, Any]) -> None:
    """An open cycle, as the fleet sees it: orphaned when its daemon is down, else running."""
    who = f"cycle {cyc.get('cycle_id')} of {cyc.get('driver')}"
    state, reason = fleet.get("daemon_state"), fleet.get("reason")
    if state == "down":
        detail = f"{who} is orphaned: its daemon is down ({reason}); it will never finish"
        c.note("cycle", detail, "orphaned", 3)
    elif state == "running_long_worker":
        c.note("cycle", f"{who} has not finished: a long-running worker ({reason})", "running", 8)
    else:
        c.note("cycle", f"{who} has not finished", "running", 8)


def _budget(c: _Case, b: Mapping[str, Any]) -> None:
    """A budget that stopped the tree (or was breached while it ran) explains the stop first."""
    used, unit = b.get("used"), b.get("unit")
    spent = f"${used:,.4f}" if unit == "usd" and isinstance(used, int | float) else f"{used} tokens"
    did = {"done": "aborted it", "gone": "aborted it", "notified": "raised an alert"}.get(
        str(b.get("outcome"))
    )
    detail = f"budget {b.get('budget')} exceeded: spent {spent}"
    if did is None:
        c.note("action", f"{detail}; the abort was {b.get('outcome')}")
    else:
        c.note("action", f"{detail}; octel watch {did}", "over_budget", 0)


def decide(s: Signals) -> WhyAnswer:
    """One verdict (`code`, `verdict`, `summary`) and the evidence, decisive items first."""
    c = _Case()
    sess, cyc = s.session or {}, s.cycle or {}
    if s.budget:
        _budget(c, s.budget)
    suspect = _findings(c, s.findings)
    cyc_text = _text(cyc.get("terminal_state"), cyc.get("worker_outcome"), cyc.get("error_kind"))
    if cyc:
        if cyc.get("in_flight"):
            _open_cycle(c, cyc, s.fleet or {})
        else:
            detail = (
                f"cycle {cyc.get('cycle_id')} of {cyc.get('driver')} ended {cyc_text or 'without a state'}"
            )
            if words.timed_out(cyc_text):
                c.note("cycle", detail, "timed_out", 2)
            elif words.aborted(cyc_text):
                c.note("cycle", detail, "aborted", 4)
            elif cyc.get("error_kind") or words.failed(cyc_text):
                c.note("cycle", detail, "error", 6)
            else:
                c.note("cycle", detail, "completed", 10)
    if sess.get("error_kind"):
        kind = str(sess["error_kind"])
        code = "timed_out" if words.timed_out(kind) else "aborted" if words.aborted(kind) else "error"
        c.note("index", f"session error kind {kind}", code, {"timed_out": 2, "aborted": 4}.get(code, 6))
    if s.live:
        detail = f"session {s.live.get('session_id')} is {s.live.get('explanation')}"
        ask = s.live.get("state") == "waiting_permission"
        c.note("live", detail, "permission_wait" if ask else None, 3)
    pending = _pending_asks(s.permission_events)
    if pending:
        c.note("archive", f"permission asked and never answered: {', '.join(pending)}", "permission_wait", 3)
    clean = False
    if s.turns is not None:
        last = s.turns[-1] if s.turns else None
        if last is None:
            c.note("archive", "no assistant turn in the archive", "empty_completion", 9)
        else:
            n = len(s.turns)
            err, finish = last.get("error"), last.get("finish")
            tokens = last.get("tokens") or {}
            if err:
                msg = f": {last.get('error_message')}" if last.get("error_message") else ""
                aborted = "abort" in str(err).lower()
                c.note(
                    "archive",
                    f"turn {n} ended with {err}{msg}",
                    "aborted" if aborted else "error",
                    4 if aborted else 6,
                )
            elif last.get("in_flight"):
                c.note("archive", f"turn {n} has not completed", "running", 8)
            elif not tokens.get("output") and not last.get("tool_calls") and not tokens.get("reasoning"):
                c.note(
                    "archive",
                    f"turn {n} finished {finish or 'without a reason'} with no output",
                    "empty_completion",
                    9,
                )
            else:
                clean = str(finish or "stop") in _CLEAN_FINISH
                c.note("archive", f"turn {n} of {n} finished: {finish or 'no reason given'}", "completed", 10)
    elif s.archive_problem:
        c.note("archive", s.archive_problem)
    if sess.get("in_flight"):
        c.note("index", "the index marks the session in flight", "running", 8)
    retries = [h for h in s.status_history if h.get("type") == "retry"]
    if retries:
        attempts = max(int(h.get("attempt") or 0) for h in retries)
        detail = f"server retried the model {len(retries)} times (attempt {attempts})"
        c.note("archive", detail, None if clean else "retries", 7)
    if not clean:
        for code, detail in suspect:
            c.candidates.append((5, code, next(i for i, e in enumerate(c.evidence) if e["detail"] == detail)))
    if not c.candidates:
        c.note("index", "no error, finding or failed state recorded", "completed", 11)
    # Retries that ended in an error explain the error.
    codes = {code for _, code, _ in c.candidates}
    if "error" in codes and "retries" in codes:
        c.candidates.append((5, "retries", next(i for r, code, i in c.candidates if code == "retries")))
    _rank, code, _ = min(c.candidates, key=lambda t: (t[0], t[2]))  # ties: strongest evidence first
    decisive = sorted({i for r, k, i in c.candidates if k == code})
    ordered = [c.evidence[i] for i in decisive] + [e for i, e in enumerate(c.evidence) if i not in decisive]
    first = c.evidence[decisive[0]]["detail"]
    return WhyAnswer.model_validate(
        {
            "id": s.ident,
            "kind": s.kind,
            "session_id": sess.get("session_id"),
            "cycle_id": cyc.get("cycle_id") or sess.get("cycle_id"),
            "code": code,
            "verdict": _verdict(code),
            "summary": f"{_verdict(code)}: {first}",
            "evidence": ordered,
        }
    )


def _latest_cycle_for(db: Session, session_id: str, cycle_id: str | None) -> Cycle | None:
    if cycle_id:
        row = db.exec(select(Cycle).where(Cycle.cycle_id == cycle_id)).first()
        if row is not None:
            return row
    stmt = select(Cycle).where(Cycle.session_id == session_id).order_by(col(Cycle.started_at).desc())
    return db.exec(stmt).first()


def why(
    db: Session, ident: str, store: ArchiveStore | Path, threshold_s: float = DEFAULT_LONG_WORKER_S
) -> WhyAnswer | None:
    """The verdict for a session id or a cycle id; None when neither is known. An open cycle is
    weighed with the fleet's word on its daemon (`threshold_s`: the long-worker heartbeat age)
    and its session's live row."""
    got = get_session(db, ident)
    cyc: Cycle | None
    if got is not None:
        kind = "session"
        cyc = _latest_cycle_for(db, ident, got.session.cycle_id)
    else:
        cyc = db.exec(select(Cycle).where(Cycle.cycle_id == ident)).first()
        if cyc is None:
            return None
        kind = "cycle"
        got = get_session(db, cyc.session_id) if cyc.session_id else None
    sess = got.session.model_dump() if got else None
    findings: list[Mapping[str, Any]] = [f.model_dump() for f in got.findings] if got else []
    turns: list[RawJson] | None = None  # the archive's per-turn entries
    status: list[Mapping[str, Any]] = []
    perms: list[Mapping[str, Any]] = []
    problem = None
    if sess is not None:
        doc, problem = open_archive(reading_in(store, db), sess["archive_path"])
        if doc is None:
            problem = f"{problem}, so per-turn evidence is missing"
        else:
            turns = turns_of(doc)
            sid = sess["session_id"]
            raw_status = doc.get("status_history") or []
            raw_perms = doc.get("permission_events") or []
            status = [
                {"type": x.type, "attempt": x.attempt}
                for x in status_from_opencode(raw_status, session_id=sid)
            ]
            perms = [
                {"kind": x.kind, "request_id": x.request_id, "permission": x.permission}
                for x in permissions_from_opencode(raw_perms, session_id=sid)
            ]
            if not findings:
                findings = [f for f in doc.get("findings") or [] if isinstance(f, Mapping)]
    now = utcnow()
    fleet = None
    if cyc is not None and cyc.ended_at is None:
        got_fleet = cycle_fleet(db, cyc.cycle_id, now, threshold_s)
        fleet = {"daemon_state": got_fleet.daemon_state, "reason": got_fleet.reason} if got_fleet else None
    live_sid = sess["session_id"] if sess else cyc.session_id if cyc is not None else None
    live_row = get_live(db, live_sid, now) if live_sid else None
    budget = budget_action(db, [x for x in (live_sid, sess["root_session_id"] if sess else None) if x])
    signals = Signals(
        kind=kind,
        ident=ident,
        session=sess,
        findings=findings,
        cycle=cycle_dict(cyc, now) if cyc is not None else None,
        turns=turns,
        status_history=status,
        permission_events=perms,
        archive_problem=problem,
        fleet=fleet,
        live=live_row.model_dump(include={"session_id", "state", "explanation"}) if live_row else None,
        budget=budget,
    )
    return decide(signals)
