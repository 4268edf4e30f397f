"""One long turn gone wrong: stopped by the output limit, or saying the same thing over and over.

Both read a single assistant turn; neither needs a tool call. A turn cut by the output limit
(finish `length`) that ends the run left the work undone; a later turn that carries on means the
agent recovered. Repetition is counted in sentences, so a plan pasted twelve times in one answer
is caught whether or not the limit stopped it.
"""

from __future__ import annotations

import re
from collections import Counter

from detectors.base import Detector, register
from detectors.digest import Turn
from detectors.findings import Finding, Verdict, grade
from detectors.model import StatusSample
from detectors.thresholds import Thresholds

__all__ = ["OutputLimit", "TurnRepetition", "repeated_sentence"]

_LENGTH = frozenset({"length", "max_tokens", "max-tokens", "MAX_TOKENS"})
_SENTENCE = re.compile(r"(?<=[.!?:;])\s+|\s+-\s+|\s+\d+\.\s+")
_MIN_SENTENCE = 24  # shorter pieces ("ok.", "1.") repeat in any long answer


def repeated_sentence(text: str) -> tuple[str, int]:
    """The sentence said most often in `text` (of at least `_MIN_SENTENCE` characters) and how often."""
    counts = Counter(s for s in _SENTENCE.split(text) if len(s) >= _MIN_SENTENCE)
    if not counts:
        return "", 0
    sentence, n = counts.most_common(1)[0]
    return sentence, n


@register(
    "output_limit", "a turn stopped by the output limit, and nothing came after it", stop_reason="error"
)
class OutputLimit(Detector):
    name = "output_limit"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._cut: Turn | None = None  # the last assistant turn, when the limit stopped it
        self._status = ""

    def feed(self, turn: Turn) -> None:
        if turn.role != "assistant" or not turn.completed:
            return
        # an empty turn cut by the limit says nothing at all: that is silent_stop's to judge
        self._cut = turn if turn.finish in _LENGTH and turn.text and not turn.calls else None

    def status(self, sample: StatusSample) -> None:
        self._status = sample.type

    def finding(self) -> Finding:
        t = self._cut
        if t is None:
            return Finding(self.name, "healthy", 0.0, {}, -1)
        verdict: Verdict = "suspect" if self._status in ("busy", "retry") else "stuck"
        ev = {
            "message_ids": [t.id],
            "finish": t.finish,
            "output_tokens": t.output_tokens,
            "status": self._status or None,
        }
        return Finding(self.name, verdict, 1.0 if verdict == "stuck" else 0.6, ev, t.index)


@register("turn_repetition", "the same sentence again and again inside one turn", stop_reason="loop_detected")
class TurnRepetition(Detector):
    name = "turn_repetition"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._best = Finding(self.name, "healthy", 0.0, {}, -1)

    def feed(self, turn: Turn) -> None:
        if turn.role != "assistant" or len(turn.text) < _MIN_SENTENCE * self.th.repeat_in_turn_suspect:
            return
        sentence, n = repeated_sentence(turn.text)
        if turn.calls and n <= len(turn.calls) + 1:
            return  # "Now let me search …" before each call: narrating the calls, not repeating
        v, s = grade(n, self.th.repeat_in_turn_suspect, self.th.repeat_in_turn_stuck)
        if s > self._best.score:
            ev = {"repeats": n, "sentence": sentence[:300], "message_ids": [turn.id], "finish": turn.finish}
            self._best = Finding(self.name, v, s, ev, turn.index)

    def finding(self) -> Finding:
        return self._best
