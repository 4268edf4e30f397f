"""The alerts of the live rules (pure: no I/O; what the watcher sees is passed in).

Two kinds, both tied to a session the watcher follows:

- ``stuck``: a live finding with verdict ``stuck`` of a detector an ``--on-stuck`` rule names
  (abort or notify); it fires while the board shows it, and resolves when the finding is gone
  or the session is no longer active (its run ended, it was aborted or deleted);
- ``live_rule``: an action a rule carried out (an ask rejected, a session aborted); it fires
  from the action and resolves once the session is no longer active.

`LiveAlerts.tick` is called once a watcher tick with the views of that tick; it returns what
fires now and the resolves (`tower.alert_dedup.Conditions`), the deliverer deduplicates.
`LiveAlerts.stopped` resolves what still fires when the watcher stops: nobody would look again
to resolve it (Alertmanager would hold it until it lapses), and the resolve says why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from tower.act import Carried
from tower.actions import Rules, SessionView
from tower.alert import Alert
from tower.alert_dedup import Conditions, session_path

__all__ = ["LiveAlerts", "stuck_alerts"]

Redact = Callable[[str], str]
_ACTED = frozenset({"done", "gone", "failed"})  # carried out (or tried): worth a person's look
_SUMMARY = 300


def _tree(v: SessionView) -> str:
    return v.root_session_id or v.session_id


def stuck_alerts(views: Iterable[SessionView], rules: Rules, redact: Redact) -> list[Alert]:
    """A ``stuck`` alert for each live stuck finding of a detector a rule names."""
    act = dict(rules.on_stuck)
    out = []
    for v in views:
        for f in v.findings:
            det = str(f.get("detector"))
            if det not in act or f.get("verdict") != "stuck":
                continue
            said = redact(str(f.get("summary") or f.get("explanation") or ""))[:_SUMMARY]
            score = f.get("score")
            how = f" (score {score:.2f})" if isinstance(score, int | float) else ""
            out.append(
                Alert(
                    f"stuck:{v.session_id}:{det}",
                    "stuck",
                    "critical" if act[det] == "abort" else "warning",
                    f"session {v.session_id} is stuck: {det}{how}" + (f": {said}" if said else ""),
                    tree_id=_tree(v),
                    session_id=v.session_id,
                    path=session_path(v.session_id),
                    labels={"detector": det, "rule": f"on_stuck={act[det]}"},
                )
            )
    return out


class LiveAlerts:
    """The live rules' alerts of one watcher, from tick to tick."""

    def __init__(self, rules: Rules, redact: Redact) -> None:
        self.rules, self.redact = rules, redact
        self.conditions = Conditions()
        self.acted: dict[str, Alert] = {}  # alert key -> alert, while its session is active

    def carried(self, done: Carried, tree_id: str | None) -> Alert | None:
        """The alert of an action carried out (None for a notice or a skipped intent: a stuck
        finding has its own alert, and nothing happened to a skipped one)."""
        it = done.intent
        if it.kind == "notify" or done.outcome not in _ACTED:
            return None
        what = "rejected an ask of" if it.kind == "reject_ask" else "aborted"
        a = Alert(
            f"live_rule:{it.key}",
            "live_rule",
            "warning",
            self.redact(f"{it.rule} {what} session {it.session_id}: {done.outcome} ({done.detail})")[
                :_SUMMARY
            ],
            tree_id=tree_id or it.session_id,
            session_id=it.session_id,
            path=session_path(it.session_id),
            labels={"rule": it.rule, "action": it.kind, "outcome": done.outcome},
        )
        self.acted[a.key] = a
        return a

    def tick(self, views: Iterable[SessionView]) -> list[Alert]:
        views = list(views)
        active = {v.session_id for v in views}
        self.acted = {k: a for k, a in self.acted.items() if a.session_id in active}
        return self.conditions.look([*stuck_alerts(views, self.rules, self.redact), *self.acted.values()])

    def stopped(self) -> list[Alert]:
        """The resolve of every alert firing (at the last tick, or an action's since), saying
        the watcher stopped; nothing fires after it."""
        firing = {**self.conditions.firing, **self.acted}
        out = [
            replace(a.resolved(), summary=f"{a.summary} (resolved: octel watch stopped following it)")
            for a in firing.values()
        ]
        self.conditions.firing, self.acted = {}, {}
        return out
