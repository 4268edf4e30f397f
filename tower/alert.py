"""An alert-worthy event, as every producer hands it to delivery (pure: no I/O, no clock).

Producers (live rules, stuck findings, budgets, quotas, a daemon down, a long-running worker)
build an `Alert` and give it to an `AlertSink`; delivery (Alertmanager, webhooks) is the sink's
business, so a producer never waits on a channel. One `key` names one condition: firing it again
updates the same alert, and resolving it sends the resolve message.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

__all__ = ["SEVERITIES", "STATES", "Alert", "AlertSink", "NullSink"]

Severity = Literal["info", "warning", "critical"]
State = Literal["firing", "resolved"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
STATES: tuple[State, ...] = ("firing", "resolved")


@dataclass(frozen=True)
class Alert:
    key: str  # stable per condition, e.g. "stuck:ses_1:doom_loop" or "budget:tree:ses_1"
    kind: str  # producer's name: live_rule, stuck, budget, quota, daemon_down, long_running
    severity: Severity
    summary: str  # one sentence a person reads first (already redacted)
    state: State = "firing"
    tree_id: str | None = None  # groups alerts of one session tree
    session_id: str | None = None
    cycle_id: str | None = None
    path: str = "/"  # console page of the session or cycle, relative to the console's base URL
    labels: Mapping[str, str] = field(default_factory=dict)

    def resolved(self) -> Alert:
        return Alert(
            self.key,
            self.kind,
            self.severity,
            self.summary,
            "resolved",
            self.tree_id,
            self.session_id,
            self.cycle_id,
            self.path,
            self.labels,
        )


class AlertSink(Protocol):
    def emit(self, alert: Alert) -> None:
        """Queue `alert` for delivery; never blocks and never raises."""


class NullSink:
    """The sink when no channel is configured: alerts are dropped here, on purpose."""

    def emit(self, alert: Alert) -> None:
        return None
