"""Going round without getting anywhere: monologue, compaction loop, no progress.

Each of these counts since the last completed file change, because a changed file is the one
sign of progress every coding run shares. Waiting (a bash `sleep`, and the check right after
it) is not counted as activity either way.
"""

from __future__ import annotations

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Turn
from detectors.findings import Finding, grade
from detectors.thresholds import Thresholds

__all__ = ["CompactionLoop", "Monologue", "NoProgress"]


@register(
    "monologue", "the same text said again and again with nothing done between", stop_reason="loop_detected"
)
class Monologue(Detector):
    name = "monologue"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._text = ""
        self._n = 0
        self._start = -1
        self._ids: list[str] = []
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        if turn.role != "assistant":
            if turn.text:  # the same answer to a new question is not a monologue
                self._n = 0
            return
        if turn.calls:
            self._n = 0
            return
        if not turn.text:
            return
        if turn.text != self._text or self._n == 0:
            self._text, self._n, self._start, self._ids = turn.text, 0, turn.index, []
        self._n += 1
        if len(self._ids) < EVIDENCE_IDS:
            self._ids.append(turn.id)
        n = self._n
        v, s = grade(n, self.th.monologue_suspect, self.th.monologue_stuck)
        ev = {"repeats": n, "text": self._text[:300], "message_ids": list(self._ids)}
        self._best.offer(v, s, n, self._start, lambda: ev)

    def finding(self) -> Finding:
        return self._best.finding(self.name, active=self._n > 0)


@register("compaction_loop", "context compactions or overflows again and again", stop_reason="loop_detected")
class CompactionLoop(Detector):
    name = "compaction_loop"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._n = 0
        self._start = -1
        self._ids: list[str] = []
        self._overflow: Turn | None = None  # an overflow not yet followed by its compaction
        self._best = Episode()

    def _count(self, turn: Turn) -> None:
        if self._n == 0:
            self._start, self._ids = turn.index, []
        self._n += 1
        if len(self._ids) < EVIDENCE_IDS:
            self._ids.append(turn.id)
        n = self._n
        v, s = grade(n, self.th.compaction_suspect, self.th.compaction_stuck)
        ev = {"compactions": n, "message_ids": list(self._ids)}
        self._best.offer(v, s, n, self._start, lambda: ev)

    def feed(self, turn: Turn) -> None:
        if turn.compaction:
            self._overflow = None  # the overflow and the compaction it caused count once
            self._count(turn)
        elif turn.error == "ContextOverflowError":
            if self._overflow is not None:
                self._count(self._overflow)
            self._overflow = turn
        elif self._overflow is not None:
            self._count(self._overflow)
            self._overflow = None
        if turn.file_change:
            self._n = 0

    def finding(self) -> Finding:
        f = self._best.finding(self.name)
        if self._overflow is not None:  # a trailing overflow: judge it as if counted
            n = self._n + 1
            v, s = grade(n, self.th.compaction_suspect, self.th.compaction_stuck)
            if (s, n) > (f.score, self._best.count):
                start = self._start if self._n else self._overflow.index
                ids = [*self._ids, self._overflow.id][:EVIDENCE_IDS] if self._n else [self._overflow.id]
                return Finding(self.name, v, s, {"compactions": n, "message_ids": ids}, start)
        return f


@register(
    "no_progress",
    "many steps with tool calls, mostly repeats, and no file change",
    stop_reason="loop_detected",
)
class NoProgress(Detector):
    name = "no_progress"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._seen: set[str] = set()
        self._steps = 0
        self._calls = 0
        self._repeats = 0
        self._start = -1
        self._after_wait = False
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        if turn.file_change:
            self._seen.clear()
            self._steps = self._calls = self._repeats = 0
            self._after_wait = False
            return
        waiting = any(c.wait for c in turn.calls)
        polling = waiting or self._after_wait
        if turn.calls:
            self._after_wait = waiting
        if polling or not turn.calls:
            return
        if self._steps == 0:
            self._start = turn.index
        self._steps += 1
        for c in turn.calls:
            self._calls += 1
            if c.sig in self._seen:
                self._repeats += 1
            else:
                self._seen.add(c.sig)
        th = self.th
        share = self._repeats / self._calls
        if self._steps >= th.no_progress_min_steps:
            v, s = grade(share, th.no_progress_suspect, th.no_progress_stuck)
        else:  # too few steps to judge; still score it so a longer run reads worse
            _, s = grade(share, th.no_progress_suspect, th.no_progress_stuck)
            v, s = "healthy", s * self._steps / max(1, th.no_progress_min_steps) * 0.49
        ev = {"steps": self._steps, "calls": self._calls, "repeated_calls": self._repeats,
              "distinct_calls": len(self._seen)}  # fmt: skip
        self._best.offer(v, s, self._steps, self._start, lambda: ev)

    def finding(self) -> Finding:
        return self._best.finding(self.name)
