"""Doom loop: the same tool call again and again, or a short cycle of calls (A B A B...).

Calls are compared by tool and canonical input, across messages, whatever text sits between
them. A completed file change (edit, write, patch) ends every run: test -> fix -> test is
progress. A run that includes a wait (bash `sleep`), or the same call answered differently
each time (numbers and paths aside), is polling and gets far higher limits. A cycle whose
calls all got the same answers as the round before is stuck after two rounds (six calls at
least): nothing in it is moving. Edits that undo each other are counted too: an edit undone
and then made again is going round in circles, whatever sits between. One command failing with
the same answer across small edits is a thrash (`detectors.thrash`), judged while unresolved.
"""

from __future__ import annotations

import functools
from collections import deque

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Call, Turn, output_shape, undo_of
from detectors.evidence import DoomLoopEvidence, UndoRedoEvidence
from detectors.findings import Finding, Verdict, grade
from detectors.thrash import Thrash
from detectors.thresholds import Thresholds

__all__ = ["DoomLoop"]


class _Run:
    """Positions i where call[i] == call[i - period], counted while unbroken."""

    __slots__ = (
        "error",
        "ids",
        "length",
        "output",
        "parts",
        "serial",
        "start",
        "streak",
        "streak_start",
        "streak_turn",
        "streak_turns",
        "varied",
        "wait",
    )

    def __init__(self) -> None:
        self.length = 0
        self.start = -1
        self.wait = False
        self.error = ""  # shared failure signature, "" when the calls did not all fail alike
        # Identical-call runs only: the last answer's shape, and how many calls in a row got it.
        self.output = ""
        self.streak = 0
        self.streak_start = -1
        # Assistant turns the streak spans, and the last one: a call made again turn after turn,
        # each time after reading the same answer, is surer than copies made at once in one turn.
        self.streak_turns = 0
        self.streak_turn = ""
        self.varied = False  # the same call was answered differently: something is changing
        self.ids: list[str] = []
        self.parts: list[str] = []
        self.serial = 0


def _add(lst: list[str], item: str) -> None:
    if len(lst) < EVIDENCE_IDS and (not lst or lst[-1] != item):
        lst.append(item)


@register("doom_loop", "the same tool call, or a short cycle of calls, repeated", stop_reason="loop_detected")
class DoomLoop(Detector):
    name = "doom_loop"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._period = max(1, int(thresholds.doom_max_period))
        # Recent calls: (call, message index, message id).
        self._recent: deque[tuple[Call, int, str]] = deque(maxlen=self._period)
        self._runs = [_Run() for _ in range(self._period + 1)]  # index = period
        self._serial = 0
        self._best = Episode()
        self._best_run: tuple[int, int] = (0, 0)
        # Edits made so far, and how often one was undone or redone since the last new change.
        self._applied: set[str] = set()
        self._flips = 0
        self._flip_start = -1
        self._flip_ids: list[str] = []
        self._thrash = Thrash(int(thresholds.thrash_fail_stuck))

    def feed(self, turn: Turn) -> None:
        for sig in turn.edits:
            self._edit(sig, turn)
        if turn.file_change:
            self._reset()
            self._flips = 0
        for call in turn.calls:
            self._call(call, turn)

    def _edit(self, sig: str, turn: Turn) -> None:
        undo = undo_of(sig)
        if undo is None:
            return
        if sig in self._applied or undo in self._applied:  # a revert, or a change made again
            if self._flips == 0:
                self._flip_start, self._flip_ids = turn.index, []
            self._flips += 1
            _add(self._flip_ids, turn.id)
            n, th = self._flips, self.th
            v, s = grade(n, th.doom_flip_stuck, th.doom_flip_stuck)
            if (s, n) > (self._best.score, self._best.count):
                self._best_run = (0, -1)
            ev: UndoRedoEvidence = {
                "signal": "undo_redo",
                "flips": n,
                "edit": sig.replace("\x00", " ", 1)[:300],
                "message_ids": list(self._flip_ids),
            }
            self._best.offer(v, s, n, self._flip_start, lambda: ev)
        self._applied.add(sig)

    def _reset(self) -> None:
        self._recent.clear()
        for r in self._runs:
            r.length = 0

    def _call(self, call: Call, turn: Turn) -> None:
        self._thrash.call(call, turn)
        recent = self._recent
        n = len(recent)
        for p in range(1, self._period + 1):
            run = self._runs[p]
            if p <= n and recent[n - p][0].sig == call.sig:
                if run.length == 0:
                    self._open(run, p, call)
                run.length += 1
                run.wait = run.wait or call.wait
                if run.error and call.error_sig != run.error:
                    run.error = ""
                if p == 1:
                    shape = output_shape(call.output_head)
                    if shape == run.output:
                        run.streak += 1
                        run.streak_turns += run.streak_turn != turn.id
                    else:
                        run.output, run.streak, run.streak_start = shape, 1, turn.index
                        run.streak_turns = 1
                        run.varied = True
                    run.streak_turn = turn.id
                elif output_shape(call.output_head) != output_shape(recent[n - p][0].output_head):
                    run.varied = True  # an answer moved since the last round
                _add(run.ids, turn.id)
                _add(run.parts, call.part_id)
            else:
                run.length = 0
        recent.append((call, turn.index, turn.id))
        self._judge(call)

    def _open(self, run: _Run, p: int, call: Call) -> None:
        self._serial += 1
        run.serial = self._serial
        window = list(self._recent)[-p:]
        run.start = window[0][1]
        run.wait = any(c.wait for c, _, _ in window)
        first_err = window[0][0].error_sig
        run.error = first_err if p == 1 and first_err else ""
        run.varied = False
        run.output = output_shape(window[0][0].output_head) if p == 1 else ""
        run.streak, run.streak_start = 1, run.start
        run.streak_turns, run.streak_turn = 1, window[0][2]
        run.ids = []
        run.parts = []
        for c, _, mid in window:
            _add(run.ids, mid)
            _add(run.parts, c.part_id)

    def _judge(self, call: Call) -> None:
        th = self.th
        ones = self._runs[1].length
        for p in range(1, self._period + 1):
            run = self._runs[p]
            if run.length == 0 or (p > 1 and ones >= p):
                continue  # not running, or just the identical-call run seen at a longer period
            reps = (run.length + p) / p
            count, start = reps, run.start
            verdict: Verdict
            if run.wait:  # waiting: polling with sleep
                verdict, score = grade(reps, th.poll_repeat_suspect, th.poll_repeat_stuck)
            elif p == 1:
                # The same call with the same answer; a changing answer is polling.
                count, start = run.streak, run.streak_start
                stuck = th.doom_fail_stuck if run.error else th.doom_repeat_stuck
                verdict, score = grade(count, th.doom_repeat_suspect, stuck)
                if run.streak_turns >= th.doom_repeat_turns_stuck:
                    verdict, score = "stuck", 1.0  # asked again turn after turn, answered alike
                if run.varied:
                    v2, s2 = grade(reps, th.poll_repeat_suspect, th.poll_repeat_stuck)
                    if s2 > score:
                        verdict, score, count, start = v2, s2, reps, run.start
            else:  # a longer cycle is a surer sign: fewer turns round it make it stuck
                stuck = th.doom_cycle_stuck if p == 2 else min(th.doom_cycle_stuck, th.doom_long_cycle_stuck)
                verdict, score = grade(reps, min(th.doom_cycle_suspect, stuck), stuck)
                if not run.varied and reps >= 2 and run.length + p >= th.doom_same_cycle_calls:
                    verdict, score = "stuck", 1.0  # two rounds, every answer as before
            if (score, count) > (self._best.score, self._best.count):
                self._best_run = (p, run.serial)
            ev = functools.partial(self._evidence, run, count, p)
            self._best.offer(verdict, score, count, start, ev)

    def _evidence(self, run: _Run, reps: float, period: int) -> DoomLoopEvidence:
        calls = [c for c, _, _ in self._recent][-period:]
        return {
            "period": period,
            "repetitions": reps,
            "signature": [c.sig.replace("\x00", " ", 1)[:300] for c in calls],
            "polling": run.wait or run.varied,
            "same_failure": run.error or None,
            "message_ids": list(run.ids),
            "part_ids": list(run.parts),
        }

    def finding(self) -> Finding:
        f = self._episode_finding()
        t = self._thrash.finding(self.name)  # the same failure across edits, still unresolved
        return t if t is not None and t.score > f.score else f

    def _episode_finding(self) -> Finding:
        p, serial = self._best_run
        if serial < 0:  # the worst episode is edits going back and forth
            return self._best.finding(self.name, active=self._flips > 0)
        run = self._runs[p] if 0 < p < len(self._runs) else None
        active = run is not None and run.length > 0 and run.serial == serial
        return self._best.finding(self.name, active=active)
