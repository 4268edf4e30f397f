"""Budgets while trees run: each tick of `octel watch`'s act loop reads the spend so far from
the store (with the watcher's own newer counts of its sessions), raises each warning and
breach once as an `Alert`, and hands the loop the intents that stop the live OpenCode sessions
of a scope over its limit (audited like every action, rule ``budget``).

A Claude Code session cannot be stopped from outside (the CLI is another process, on another
host maybe, with no control door): its breach is an alert that says so, whatever the action.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy.engine import Engine

from telemetry.queries.budget_spend import SpendSoFar, spend_so_far
from telemetry.store.db import session_scope
from telemetry.store.live_models import LiveSession
from telemetry.tower.quota_watch import QuotaWatch
from tower.actions import Intent, SessionView
from tower.alert import Alert, AlertSink, NullSink
from tower.budgets import Budget, Crossing, Scope, budget_intents, crossings
from tower.live_board import LiveBoard
from tower.quotas import Quota

__all__ = ["BudgetWatch", "alert_of"]

_CANNOT = "Claude Code cannot be stopped from outside: stop it by hand"


def _what(c: Crossing, day: str) -> str:
    scope, s = c.budget.scope, c.subject
    return {
        "tree": f"tree {s}",
        "driver_day": f"driver {s} on {day}",
        "label": f"label {s}",
        "fleet_day": f"the fleet on {day}",
    }[scope]


def _amount(c: Crossing) -> str:
    return f"${c.used:,.4f}" if c.budget.unit == "usd" else f"{c.used:,.0f} tokens"


def alert_of(c: Crossing, day: str, *, claude: bool = False) -> Alert:
    """The alert of one crossing: a warning at ``warn_at``, critical at the limit, saying what
    octel does about it."""
    b = c.budget
    said = f"{_what(c, day)} spent {_amount(c)}, {c.share:.0%} of budget {b.name}"
    if c.level == "warning":
        summary, severity = f"{said}", "warning"
    elif claude:
        summary, severity = f"{said}: over its limit; {_CANNOT}", "critical"
    elif b.action == "abort":
        more = "" if b.scope == "tree" else "; Claude Code sessions in it cannot be stopped from outside"
        summary, severity = (
            f"{said}: over its limit; octel watch aborts its OpenCode sessions{more}",
            "critical",
        )
    else:
        summary, severity = f"{said}: over its limit (notify only)", "critical"
    tree = c.subject if b.scope == "tree" else None
    return Alert(
        key=c.key,
        kind="budget",
        severity=severity,  # type: ignore[arg-type]
        summary=summary,
        tree_id=tree,
        session_id=tree,
        path=f"/sessions/{tree}" if tree else "/costs",
        labels={"scope": b.scope, "level": c.level, "budget": b.name},
    )


def _fresher(board: LiveBoard, root_of: Callable[[str], str | None]) -> list[LiveSession]:
    """The board's own counts of its sessions, newer than their live rows by up to a tick."""
    out = []
    for sid, s in board.sessions.items():
        t = s.totals
        if not t[5] and not any(t[:5]):
            continue
        out.append(
            LiveSession(
                server=board.server,
                session_id=sid,
                root_session_id=root_of(sid),
                state="busy",
                tokens_input=int(t[0]),
                tokens_output=int(t[1]),
                tokens_reasoning=int(t[2]),
                tokens_cache_read=int(t[3]),
                tokens_cache_write=int(t[4]),
                cost_usd=float(t[5]),
            )
        )
    return out


class BudgetWatch:
    """The budgets (and quota windows) of one act loop: what was raised already, and where
    alerts go."""

    @property
    def any(self) -> bool:
        return bool(self.budgets or self.quotas.quotas)

    def __init__(
        self,
        budgets: Sequence[Budget],
        sink: AlertSink | None = None,
        *,
        label: str | None = None,
        quotas: Sequence[Quota] = (),
        alert_only: bool = False,
    ):
        self.budgets = tuple(budgets)
        self.sink: AlertSink = sink or NullSink()
        self.quotas = QuotaWatch(quotas, self.sink)
        self.label = label
        # no OpenCode server followed (`watch --claude-dir` alone): every breach is an alert
        self.alert_only = alert_only
        self.raised: set[str] = set()
        self.breach_tick: dict[tuple[str, str], int] = {}  # (budget, subject) -> tick first seen
        self.scopes: tuple[Scope, ...] = tuple(dict.fromkeys(b.scope for b in self.budgets))

    def check(
        self,
        engine: Engine,
        now: float,
        board: LiveBoard | None = None,
        root_of: Callable[[str], str | None] = lambda _s: None,
        roots: Iterable[str] = (),
        *,
        tick: int = 0,
    ) -> SpendSoFar:
        """Read the spend so far and raise what crossed; ``board``: the watcher's own counts
        (``root_of`` names each session's root); ``roots``: the trees it shows running;
        ``tick``: the act loop's tick, kept for each breach's first sight."""
        self.quotas.check(engine, now)
        if not self.budgets:
            return SpendSoFar(datetime.fromtimestamp(now, UTC).date().isoformat())
        fresher = _fresher(board, root_of) if board is not None else []
        tree_roots = set(roots) | {r for x in fresher if (r := x.root_session_id)}
        labels = dict.fromkeys(tree_roots, self.label) if self.label else {}
        with session_scope(engine, write=False) as db:
            got = spend_so_far(
                db,
                datetime.fromtimestamp(now, UTC),
                scopes=self.scopes,
                roots=tree_roots,
                fresher=fresher,
                labels=labels,
            )
        for c in crossings(got.spent, self.budgets, got.day, self.raised):
            self.raised.add(c.key)
            if c.level == "breach":
                self.breach_tick.setdefault((c.budget.name, c.subject), tick)
            claude = self.alert_only or (c.budget.scope == "tree" and c.subject in got.claude_roots)
            self.sink.emit(alert_of(c, got.day, claude=claude))
        return got

    def intents(
        self,
        views: Sequence[SessionView],
        got: SpendSoFar,
        done: Collection[str],
        now: float,
        *,
        tick: int = 0,
    ) -> list[Intent]:
        """The budget intents of the live sessions shown (their evidence says when the breach
        was seen, and in which tick: the audit row's time less that is the time it took to
        act, its ``acted_tick`` less ``breach_tick`` the ticks it waited)."""
        drivers = got.drivers

        def subjects(v: SessionView) -> dict[Scope, str]:
            root = v.root_session_id or v.session_id
            out: dict[Scope, str] = {"tree": root}
            if (d := drivers.get(root) or drivers.get(v.session_id)) is not None:
                out["driver_day"] = d
            if self.label:
                out["label"] = self.label
            return out

        got_now = budget_intents(views, got.spent, self.budgets, subjects, done)
        return [
            replace(i, evidence={**i.evidence, "seen_at": round(now, 3), "breach_tick": self._first(i, tick)})
            for i in got_now
        ]

    def _first(self, it: Intent, tick: int) -> int:
        return self.breach_tick.get((str(it.evidence["budget"]), str(it.evidence["subject"])), tick)
