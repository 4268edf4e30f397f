"""Going round without getting anywhere: monologue, compaction loop, no progress.

Each of these counts since the last completed file change, because a changed file is the one
sign of progress every coding run shares. Waiting (a bash `sleep`, and the check right after
it) is not counted as activity either way.
"""

from __future__ import annotations

import json
import re

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.commands import command_of
from detectors.digest import FILE_TOOLS, Call, Turn, output_shape
from detectors.findings import Finding, grade
from detectors.thresholds import Thresholds

__all__ = ["CompactionLoop", "Monologue", "NoProgress"]

_SLEEP_S = re.compile(r"\bsleep\s+([0-9]+(?:\.[0-9]+)?)")


def _slept(sig: str) -> float:
    """Seconds a wait call sleeps (a bare `sleep` tool call counts as a second)."""
    return sum(float(x) for x in _SLEEP_S.findall(sig)) or 1.0


_BARE_SLEEP = re.compile(r"^\s*sleep\s+[0-9.]+[smh]?\s*;?\s*$")


def _bare_sleep(c: Call) -> bool:
    """A call that only sleeps: the wait before a check, not a check itself."""
    if not c.wait:
        return False
    return c.tool != "bash" or _BARE_SLEEP.match(command_of(c.sig.split("\x00", 1)[1])) is not None


def _poll_key(c: Call) -> str:
    """A poll is the same poll whatever it sleeps and however it is described."""
    cmd = command_of(c.sig.split("\x00", 1)[1]) if c.tool == "bash" else ""
    return c.tool + "\x00" + output_shape(cmd or c.sig)


# Tools that plan rather than find out: rewriting the todo list is not a new fact.
_PLANNING = frozenset({"todowrite", "todoread"})


def _todo_items(sig: str) -> frozenset[str] | None:
    """The items of a todo list a call writes (their text, not their states), if it writes one."""
    try:
        todos = json.loads(sig.split("\x00", 1)[1]).get("todos")
        return frozenset(str(t.get("content", "")) for t in todos) if isinstance(todos, list) else None
    except (ValueError, AttributeError, IndexError):
        return None


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
        if turn.summary:
            return  # compaction summaries read alike by design; compaction_loop judges them
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
    "many steps without a file change or a new fact, or polls that never change",
    stop_reason="loop_detected",
)
class NoProgress(Detector):
    """Signals since the session's own last file change. Steps: most calls repeat one made
    before with the same answer (or only rewrite the todo list); sooner, a few such repeats
    that make a fair share of the calls, or the same todo list rewritten more often than
    anything new was found. Polls: a wait and a check that keeps getting the answer it got
    before."""

    name = "no_progress"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        # Call + answer shape: the facts learnt so far, each with the call count when last asked.
        self._seen: dict[str, int] = {}
        self._steps = 0
        self._calls = 0
        self._repeats = 0
        self._start = -1
        self._after_wait = False
        self._stale = 0
        self._stale_start = -1
        self._waited = 0.0  # seconds slept in those polls
        self._same = 0  # calls that repeat one asked a while ago and got the same answer
        self._new = 0  # calls that brought a fact not seen before
        self._lists: set[frozenset[str]] = set()  # todo lists written (their items)
        self._replans = 0  # rewrites of a todo list already written, items unchanged
        self._idle_replans = 0  # such rewrites with nothing new found since that list was first written
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        if turn.file_change:
            self._seen.clear()
            self._steps = self._calls = self._repeats = self._stale = 0
            self._same = self._new = self._replans = self._idle_replans = 0
            self._lists.clear()
            self._after_wait = False
            return
        if not turn.calls:
            return
        waiting = any(c.wait for c in turn.calls)
        polling = waiting or self._after_wait
        self._after_wait = waiting
        new = 0
        for c in turn.calls:
            fact = (_poll_key(c) if polling else c.sig) + "\x01" + output_shape(c.output_head)
            last = self._seen.get(fact)
            if c.tool in _PLANNING or last is not None:
                self._repeats += not polling
                if not polling:
                    self._repeat(c, last)
            else:
                new += 1
                self._new += not polling
                if not polling:
                    self._idle_replans = 0  # something found: the rewrites before it were not idle
            self._seen[fact] = self._calls
            self._calls += not polling
        if polling:
            self._poll(turn, new)
        else:
            self._step(turn)

    def _repeat(self, c: Call, last: int | None) -> None:
        if c.tool not in _PLANNING:
            # The same call again within a few calls is a loop: doom_loop's. Going back to
            # something asked a while ago, with nothing new learnt, is the lack of progress.
            if c.tool not in FILE_TOOLS and last is not None and self._calls - last > 1:
                self._same += 1
            return
        items = _todo_items(c.sig)
        if items is None:
            return
        if items in self._lists:
            self._replans += 1
            self._idle_replans += 1
        else:
            self._idle_replans = 0
        self._lists.add(items)

    def _poll(self, turn: Turn, new: int) -> None:
        if all(_bare_sleep(c) for c in turn.calls):
            self._waited += sum(_slept(c.sig) for c in turn.calls)
            return  # a bare sleep: the check that follows is the poll
        if new:
            self._stale, self._waited = 0, 0.0
            return
        if self._stale == 0:
            self._stale_start = turn.index
        self._stale += 1
        self._waited += sum(_slept(c.sig) for c in turn.calls if c.wait)
        n, th = self._stale, self.th
        if self._waited <= th.stale_poll_patience_s:  # quick polls of an answer that never moves
            v, s = grade(n, th.stale_poll_suspect, th.stale_poll_stuck)
        else:  # long waits: something slow outside (a CI run, a deploy) may still be coming
            v, s = grade(n, th.poll_repeat_suspect, th.poll_repeat_stuck)
        ev = {"signal": "stale_polls", "polls": n, "waited_s": round(self._waited, 1)}
        self._best.offer(v, s, n, self._stale_start, lambda: ev)

    def _step(self, turn: Turn) -> None:
        if self._steps == 0:
            self._start = turn.index
        self._steps += 1
        th = self.th
        share = self._repeats / max(1, self._calls)
        if self._steps >= th.no_progress_min_steps:
            v, s = grade(share, th.no_progress_suspect, th.no_progress_stuck)
        else:  # too few steps to judge; still score it so a longer run reads worse
            _, s = grade(share, th.no_progress_suspect, th.no_progress_stuck)
            v, s = "healthy", s * self._steps / max(1, th.no_progress_min_steps) * 0.49
        ev = {
            "signal": "repeats",
            "steps": self._steps,
            "calls": self._calls,
            "repeated_calls": self._repeats,
            "distinct_calls": len(self._seen),
        }
        self._best.offer(v, s, self._steps, self._start, lambda: ev)
        self._early()

    def _early(self) -> None:
        """Sooner than the share after `no_progress_min_steps`: evidence a watcher would not
        wait for. The same answers to the same calls again and again (few, but a fair share of
        what was done), or the same todo list rewritten more often than anything was found."""
        th = self.th
        same, share = self._same, self._same / max(1, self._calls)
        if same >= th.no_progress_same_stuck and share >= th.no_progress_same_share:
            ev = {
                "signal": "same_answers",
                "steps": self._steps,
                "calls": self._calls,
                "repeated_calls": same,
                "distinct_calls": len(self._seen),
            }
            self._best.offer("stuck", 1.0, self._steps, self._start, lambda: ev)
        if self._replans >= th.no_progress_replan_stuck and self._replans > self._new:
            ev2 = {
                "signal": "replanning",
                "steps": self._steps,
                "rewrites": self._replans,
                "new_facts": self._new,
            }
            self._best.offer("stuck", 1.0, self._steps, self._start, lambda: ev2)
        elif self._idle_replans >= th.no_progress_replan_idle_stuck:
            # the same list written again and again with not one call between finding anything
            ev3 = {
                "signal": "replanning",
                "steps": self._steps,
                "rewrites": self._replans,
                "idle_rewrites": self._idle_replans,
                "new_facts": self._new,
            }
            self._best.offer("stuck", 1.0, self._steps, self._start, lambda: ev3)

    def finding(self) -> Finding:
        f = self._best.finding(self.name)
        th = self.th
        share = self._repeats / max(1, self._calls)
        long = self._steps >= th.no_progress_long_steps and share >= th.no_progress_long_share
        if f.verdict != "stuck" and long:
            # A long stretch going over old ground, still going: an exploration that ends in an
            # edit was not stuck after all, so this one is judged only while it lasts.
            ev = {
                "signal": "long_run",
                "steps": self._steps,
                "calls": self._calls,
                "active": True,
                "repeated_calls": self._repeats,
                "distinct_calls": len(self._seen),
            }
            return Finding(self.name, "stuck", 1.0, ev, self._start)
        return f
