"""Turns where the model says nothing: empty or reasoning-only loops, and the silent stop.

A turn that calls a tool (even a `sleep`) is not empty: the agent is waiting, not stuck. Turns
that ended in an error belong to other detectors, and a turn still in flight is not judged yet.
"""

from __future__ import annotations

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Turn
from detectors.findings import Finding, Verdict
from detectors.findings import grade as _grade
from detectors.model import StatusSample
from detectors.thresholds import Thresholds

__all__ = ["EmptyReasoning", "SilentStop", "is_empty"]


def is_empty(turn: Turn) -> bool:
    """A finished assistant turn with no text and no tool call (reasoning alone is empty)."""
    return (
        turn.role == "assistant"
        and turn.completed
        and turn.error is None
        and not turn.text
        and not turn.calls
    )


@register(
    "empty_reasoning", "turns with no text and no tool call, again and again", stop_reason="empty_completion"
)
class EmptyReasoning(Detector):
    name = "empty_reasoning"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._n = 0
        self._start = -1
        self._ids: list[str] = []
        self._reasoning = 0
        self._zero = 0
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        if is_empty(turn):
            if self._n == 0:
                self._start, self._ids, self._reasoning, self._zero = turn.index, [], 0, 0
            self._n += 1
            self._reasoning += turn.has_reasoning
            self._zero += turn.output_tokens == 0
            if len(self._ids) < EVIDENCE_IDS:
                self._ids.append(turn.id)
            n = self._n
            v, s = _grade(n, self.th.empty_turn_suspect, self.th.empty_turn_stuck)
            ev = {
                "empty_turns": n,
                "reasoning_only": self._reasoning,
                "zero_output": self._zero,
                "message_ids": list(self._ids),
            }
            self._best.offer(v, s, n, self._start, lambda: ev)
        elif turn.role == "assistant" and turn.completed and (turn.text or turn.calls):
            self._n = 0

    def finding(self) -> Finding:
        return self._best.finding(self.name, active=self._n > 0)


_QUIET = Finding("silent_stop", "healthy", 0.0, {}, -1)


@register("silent_stop", "the last turn is empty and the session went idle", stop_reason="empty_completion")
class SilentStop(Detector):
    name = "silent_stop"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._last: Turn | None = None
        self._status = ""

    def feed(self, turn: Turn) -> None:
        self._last = turn

    def status(self, sample: StatusSample) -> None:
        self._status = sample.type

    def finding(self) -> Finding:
        last = self._last
        if last is None or not is_empty(last):
            return _QUIET
        verdict: Verdict
        if self._status == "idle":
            verdict, score = "stuck", 1.0
        elif self._status == "":
            verdict, score = "suspect", 0.6  # no status history: cannot tell idle from busy
        else:
            verdict, score = "healthy", 0.3  # still busy: another step may follow
        ev = {
            "message_ids": [last.id],
            "finish": last.finish,
            "status": self._status or None,
            "reasoning_only": last.has_reasoning,
        }
        return Finding(self.name, verdict, score, ev, last.index)
