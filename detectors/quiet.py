"""Turns where the model says nothing: empty or reasoning-only loops, and the silent stop.

A turn that calls a tool (even a `sleep`) is not empty: the agent is waiting, not stuck. Turns
that ended in an error belong to other detectors, and a turn still in flight is not judged yet.
"""

from __future__ import annotations

import re

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Turn
from detectors.findings import Finding, Verdict
from detectors.findings import grade as _grade
from detectors.model import StatusSample
from detectors.thresholds import Thresholds

__all__ = ["EmptyReasoning", "SilentStop", "announces", "is_empty"]


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
# A turn's last sentence that says what comes next ("Let me run the tests.", "Now I'll fix it:")
_ANNOUNCE = re.compile(
    r"^(?:(?:now|next|first|then|ok|okay|great|good|perfect|alright|so)[,!]?\s+)*"
    r"(?:let me|let's|i'll|i will|i'm going to|i am going to|i need to)\s+(?!know\b|wait\b|stop\b)"
)
# What a person types to make it go on: short, and nothing else in it.
_NUDGE = re.compile(
    r"^(?:please\s+)?(?:proceed|continue|go on|go ahead|keep going|carry on|do it|resume)\W*$"
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def announces(turn: Turn) -> bool:
    """A finished assistant turn that says what it will do next and does nothing: no tool call,
    and its last sentence an announcement ("let me check the tests.")."""
    if turn.role != "assistant" or not turn.completed or turn.error is not None or turn.calls:
        return False
    if not turn.text or turn.text.endswith("?"):
        return False
    last = _SENTENCE_END.split(turn.text)[-1]
    return _ANNOUNCE.match(last) is not None


@register("silent_stop", "the last turn is empty and the session went idle", stop_reason="empty_completion")
class SilentStop(Detector):
    """The run stopped without saying why: its last turn empty, or a turn that announced work
    and ended without doing it, again and again (a person had to type "proceed")."""

    name = "silent_stop"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._last: Turn | None = None
        self._status = ""
        self._nudged = 0  # announcements a person answered with "go on"
        self._first = -1
        self._ids: list[str] = []

    def feed(self, turn: Turn) -> None:
        last = self._last
        if turn.role == "user" and last is not None and announces(last) and _NUDGE.match(turn.text):
            if self._nudged == 0:
                self._first = last.index
            self._nudged += 1
            if len(self._ids) < EVIDENCE_IDS:
                self._ids.append(last.id)
        self._last = turn

    def status(self, sample: StatusSample) -> None:
        self._status = sample.type

    def finding(self) -> Finding:
        last = self._last
        if last is not None and (self._nudged or announces(last)):
            return self._announced(last)
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

    def _announced(self, last: Turn) -> Finding:
        """Turns that ended on "let me …": stopping there again and again is stuck; the last
        turn ending so, as the empty one is (idle: stuck, no status: suspect)."""
        ending = announces(last)
        n = self._nudged + ending
        verdict, score = _grade(n, 1, self.th.announce_stop_stuck)
        if ending and self._status == "idle":
            verdict, score = "stuck", 1.0
        elif ending and self._status not in ("", "idle") and n < self.th.announce_stop_stuck:
            verdict, score = "healthy", 0.3  # still busy: the next step may yet come
        ids = [*self._ids, last.id][:EVIDENCE_IDS] if ending else list(self._ids)
        ev = {
            "signal": "announced",
            "count": n,
            "nudged": self._nudged,
            "text": _SENTENCE_END.split(last.text)[-1][:200] if ending else None,
            "status": self._status or None,
            "message_ids": ids,
        }
        return Finding(self.name, verdict, score, ev, self._first if self._nudged else last.index)
