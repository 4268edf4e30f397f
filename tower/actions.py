"""What the watcher should do to a live session on a rule's behalf (pure: no I/O, no clock).

Acting is opt-in: with no rule set, `decide` returns nothing. Three rules:

- ``deny_asks_after`` (seconds): reply ``reject`` to a permission ask unanswered that long
  (a headless fleet has nobody to answer it);
- ``abort_retries_after`` (attempts): abort a session whose provider retry reached that attempt;
- ``on_stuck`` (detector -> ``abort`` or ``notify``): act on a live finding of that detector with
  verdict ``stuck``.

`decide` takes what the watcher sees of each session now, the rules, the time and the keys of
the intents already carried out, and returns each intent once, with the evidence that
justified it. Whether the intent still holds is checked against the server just before acting
(`tower.act`), since the state may move between the decision and the request.

What a watcher did must outlive it: the keys in its memory die with it, so before acting the
audit is read (`screen`). A key the audit holds, whatever its outcome, is never acted on again
(a run aborted twice, an ask rejected twice); a row another watcher left ``sending`` (it died
between the request and the outcome) is handed back to be reported as ``unknown``, never sent
again. A run's key is its prompt's message id, the same for every watcher that saw it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "OUTCOMES",
    "RULES",
    "Intent",
    "Recorded",
    "Rules",
    "SessionView",
    "decide",
    "parse_on_stuck",
    "screen",
]

RuleName = Literal["deny_asks_after", "abort_retries_after", "on_stuck", "budget"]
# budget: a spend limit crossed (`tower.budgets` decides those intents)
RULES: tuple[RuleName, ...] = ("deny_asks_after", "abort_retries_after", "on_stuck", "budget")
# "person": an ask answered from the console or `octel asks reply` (`tower.answer`), not a rule
Author = RuleName | Literal["person"]
Kind = Literal["reject_ask", "allow_ask", "abort", "notify"]
Outcome = Literal["done", "skipped", "gone", "failed", "notified", "sending", "unknown"]
# done: the server accepted it; skipped: a re-check showed the session had moved on, nothing
# was sent; gone: sent, and the server no longer knew it; failed: sent (or re-checking) and the
# server failed or answered something else; notified: a notify rule, nothing sent; sending:
# written before the request, until its outcome replaces it; unknown: the watcher died while
# sending (the request may or may not have reached the server), never sent again.
OUTCOMES: tuple[Outcome, ...] = ("done", "skipped", "gone", "failed", "notified", "sending", "unknown")
_STUCK_ACTIONS = ("abort", "notify")


@dataclass(frozen=True)
class Rules:
    deny_asks_after: float | None = None  # seconds
    abort_retries_after: int | None = None  # retry attempt
    on_stuck: tuple[tuple[str, str], ...] = ()  # (detector, abort|notify)

    @property
    def any(self) -> bool:
        return self.deny_asks_after is not None or self.abort_retries_after is not None or bool(self.on_stuck)

    def describe(self) -> str:
        parts = []
        if self.deny_asks_after is not None:
            parts.append(f"reject asks unanswered {self.deny_asks_after:g} s")
        if self.abort_retries_after is not None:
            parts.append(f"abort at retry attempt {self.abort_retries_after}")
        parts += [f"{act} on {det} stuck" for det, act in self.on_stuck]
        return "; ".join(parts) or "observe only"


@dataclass(frozen=True)
class SessionView:
    """What the watcher knows of one session now (the live board's derived state)."""

    session_id: str
    state: str
    root_session_id: str | None = None
    ask_id: str | None = None  # the oldest pending ask
    permission: str | None = None
    patterns: tuple[str, ...] = ()
    asked_at: float | None = None
    retry_attempt: int = 0
    retry_message: str = ""
    findings: tuple[Mapping[str, Any], ...] = ()
    asks: tuple[tuple[str, float], ...] = ()  # every pending ask: (request id, asked at)
    run_since: float | None = None  # when the current run began: a new run may be acted on again
    run_id: str | None = None  # the current run's prompt (its message id), when the watcher saw it


@dataclass(frozen=True)
class Intent:
    rule: Author
    kind: Kind
    session_id: str
    key: str  # once per key: an ask, a retry run, a finding
    evidence: Mapping[str, Any] = field(default_factory=dict)
    request_id: str | None = None  # the ask to reject


def parse_on_stuck(items: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """``DETECTOR=abort|notify`` items (a comma inside one item separates more) into pairs;
    ValueError naming the bad item. The detector name is checked by the caller."""
    out: dict[str, str] = {}
    for item in items:
        for part in filter(None, (p.strip() for p in item.split(","))):
            det, sep, act = part.partition("=")
            det, act = det.strip(), act.strip()
            if not sep or not det or act not in _STUCK_ACTIONS:
                raise ValueError(f"{part!r} is not DETECTOR=abort or DETECTOR=notify")
            out[det] = act
    return tuple(sorted(out.items()))


_WAITING = "waiting_permission"
QUIET = frozenset({"idle", "interrupted", "errored", "deleted", "unknown"})


def _asks(v: SessionView) -> tuple[tuple[str, float], ...]:
    if v.asks:
        return v.asks
    return ((v.ask_id, v.asked_at),) if v.ask_id and v.asked_at is not None else ()


def run_key(v: SessionView) -> str:
    """The run's prompt id: the same key whichever watcher decides, and across the run's states."""
    return str(v.run_id or v.run_since)


def decide(
    views: Iterable[SessionView], rules: Rules, now: float, done: Collection[str] = ()
) -> list[Intent]:
    """The intents due now, each at most once (keys in ``done`` were carried out already).
    A session that is quiet, deleted or out of sight is never acted on."""
    if not rules.any:
        return []
    out: list[Intent] = []
    stuck_rules = dict(rules.on_stuck)
    for v in views:
        if v.state in QUIET:
            continue
        run = run_key(v)
        abort_key = f"abort:{v.session_id}:{run}"  # one abort per run, whichever rule
        if rules.deny_asks_after is not None and v.state == _WAITING:
            for rid, at in _asks(v):
                waited = now - at
                if waited >= rules.deny_asks_after and (key := f"ask:{rid}") not in done:
                    ev = {
                        "request_id": rid,
                        "permission": v.permission,
                        "patterns": list(v.patterns),
                        "asked_at": at,
                        "waited_s": round(waited, 3),
                        "after_s": rules.deny_asks_after,
                    }
                    out.append(Intent("deny_asks_after", "reject_ask", v.session_id, key, ev, rid))
        if (
            rules.abort_retries_after is not None
            and v.state == "retrying"
            and v.retry_attempt >= rules.abort_retries_after
            and abort_key not in done
        ):
            ev = {
                "attempt": v.retry_attempt,
                "after_attempts": rules.abort_retries_after,
                "message": v.retry_message,
            }
            out.append(Intent("abort_retries_after", "abort", v.session_id, abort_key, ev))
        for f in v.findings:
            det = str(f.get("detector"))
            act = stuck_rules.get(det)
            if act is None or f.get("verdict") != "stuck":
                continue
            key = abort_key if act == "abort" else f"notify:{v.session_id}:{run}:{det}"
            if key in done or any(i.key == key for i in out):
                continue
            ev = {
                "detector": det,
                "verdict": "stuck",
                "score": f.get("score"),
                "summary": str(f.get("summary") or f.get("explanation") or ""),
            }
            out.append(Intent("on_stuck", "abort" if act == "abort" else "notify", v.session_id, key, ev))
    return out


@dataclass(frozen=True)
class Recorded:
    """An audit row of an intent key, as the store holds it."""

    key: str
    outcome: str
    watcher: str | None = None
    row_id: int | None = None


def screen(
    intents: Iterable[Intent], audit: Mapping[str, Recorded], holder: str | None
) -> tuple[list[Intent], list[Recorded]]:
    """The intents the audit holds no row of (to act on), and the rows of the others that a
    different watcher left ``sending`` (it died mid-request: to be reported, not re-sent)."""
    act: list[Intent] = []
    orphans: list[Recorded] = []
    for it in intents:
        got = audit.get(it.key)
        if got is None:
            act.append(it)
        elif got.outcome == "sending" and got.watcher != holder:
            orphans.append(got)
    return act, orphans
