"""Command timeout: a shell command ran into the tool's timeout, and the run stalled after it.

The typical cause is a command waiting for a person (`git commit` without `-m` opening an
editor, `gh auth login`, a pager). The timeout alone is news, not trouble: the agent may rerun
the command with more time or another flag. Trouble is what follows: the next step never
finishes (aborted, or still open while the session sits), the session goes idle right after,
or the same command times out again.
"""

from __future__ import annotations

from detectors.base import Detector, register
from detectors.commands import command_of, is_interactive
from detectors.digest import Call, Turn
from detectors.findings import Finding, Verdict
from detectors.model import StatusSample
from detectors.thresholds import Thresholds

__all__ = ["CommandTimeout"]

_NONE = Finding("command_timeout", "healthy", 0.0, {}, -1)


@register(
    "command_timeout", "a command ran into its timeout and the run stalled after it", stop_reason="timed_out"
)
class CommandTimeout(Detector):
    name = "command_timeout"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._call: Call | None = None  # the last timed-out call not yet followed by work
        self._turn: tuple[int, str] = (-1, "")
        self._after: list[str] = []  # what followed: "stalled" steps, in order
        self._again = 0  # the same command timing out again
        self._status = ""
        self._best = _NONE

    def feed(self, turn: Turn) -> None:
        if turn.role != "assistant":
            return
        timed = [c for c in turn.calls if c.timed_out]
        if self._call is not None and not timed:
            if not turn.calls and not turn.text:
                self._after.append(turn.id)  # the next step came back with nothing, or never
            else:  # the agent carried on: keep the episode only if it had stalled meanwhile
                self._keep()
                self._call = None
        if timed:
            c = timed[-1]
            self._again = self._again + 1 if self._call is not None and self._call.sig == c.sig else 0
            self._call, self._turn, self._after = c, (turn.index, turn.id), []

    def status(self, sample: StatusSample) -> None:
        self._status = sample.type

    def _current(self) -> Finding:
        c = self._call
        if c is None:
            return _NONE
        verdict: Verdict
        if self._after or self._again:
            verdict, score = "stuck", 1.0
        elif self._status == "idle":
            verdict, score = "stuck", 0.9  # nothing after the timeout and the session stopped
        else:
            verdict, score = "suspect", 0.5
        cmd = command_of(c.sig.split("\x00", 1)[1]) if c.tool == "bash" else ""
        ev = {
            "command": cmd[:300],
            "interactive": is_interactive(cmd),
            "part_ids": [c.part_id],
            "message_ids": [self._turn[1], *self._after][:20],
            "stalled_steps": len(self._after),
            "timed_out_again": self._again,
        }
        return Finding(self.name, verdict, score, ev, self._turn[0])

    def _keep(self) -> None:
        f = self._current()
        if f.verdict == "stuck" and self._after and f.score > self._best.score:
            self._best = f

    def finding(self) -> Finding:
        f = self._current()
        return f if f.score >= self._best.score else self._best
