"""Retry cascade: failures that keep coming.

Four signals, the worst wins: a run of failing tool calls; one tool failing the same way with
whatever arguments (until it succeeds or a file changes); model steps that end in a provider
error; and the provider retry attempts recorded in the status history. Retries after which the
run ended on a provider error (the client gave up), or on an empty step with the session idle
(an overloaded provider answered until OpenCode stopped), are stuck however few they were.
"""

from __future__ import annotations

import json

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Call, Turn
from detectors.evidence import RetriesEvidence, RetryEvidence, RetrySignal
from detectors.findings import Finding, grade
from detectors.model import StatusSample
from detectors.thresholds import Thresholds

__all__ = ["RetryCascade"]

# Errors that are not the provider failing: an abort is a person, an overflow has its detector.
# Not the provider's fault: an abort, an overflow, the output limit (output_limit judges that).
_NOT_PROVIDER = frozenset({"MessageAbortedError", "ContextOverflowError", "MessageOutputLengthError"})


def _key(call: Call) -> str:
    """Same tool, same failure; for bash also the same program (pytest is not grep)."""
    if call.tool == "bash" and call.error_sig.startswith("exit:"):
        try:
            cmd = json.loads(call.sig.split("\x00", 1)[1]).get("command", "")
        except (ValueError, AttributeError):
            cmd = ""
        words = cmd.split() if isinstance(cmd, str) else []
        return f"bash {words[0] if words else ''} {call.error_sig}"
    return f"{call.tool} {call.error_sig}"


class _Count:
    __slots__ = ("ids", "n", "parts", "start")

    def __init__(self, start: int) -> None:
        self.n = 0
        self.start = start
        self.ids: list[str] = []
        self.parts: list[str] = []

    def add(self, mid: str, pid: str) -> None:
        self.n += 1
        if len(self.ids) < EVIDENCE_IDS and (not self.ids or self.ids[-1] != mid):
            self.ids.append(mid)
        if len(self.parts) < EVIDENCE_IDS:
            self.parts.append(pid)


@register(
    "retry_cascade", "failing tool calls, provider errors or retries that keep coming", stop_reason="retries"
)
class RetryCascade(Detector):
    name = "retry_cascade"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._run: _Count | None = None  # current run of failing calls
        # tool -> failure key -> count, since that tool last worked (a success drops its tool)
        self._by_tool: dict[str, dict[str, _Count]] = {}
        self._provider: _Count | None = None
        self._attempt = 0
        self._retry_msg = ""
        self._quiet: tuple[int, str] = (-1, "")  # the last assistant step, when it was empty
        self._ended_on_error = False  # the last assistant step is a provider error
        self._last_status = ""
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        if turn.file_change:
            self._by_tool.clear()
        for call in turn.calls:
            if call.status in ("pending", "running") or call.wait:
                continue  # a poll that fails while it waits is waiting, not failing
            if call.error_sig:
                self._failure(call, turn)
            else:
                self._run = None
                self._by_tool.pop(call.tool, None)
        if turn.role == "assistant":
            if turn.error is not None and turn.error not in _NOT_PROVIDER:
                if self._provider is None:
                    self._provider = _Count(turn.index)
                self._provider.add(turn.id, "")
                p = self._provider
                v, s = grade(p.n, self.th.provider_error_suspect, self.th.provider_error_stuck)
                self._best.offer(v, s, p.n, p.start, lambda: self._ev("provider_errors", p, turn))
                self._ended_on_error = True
            elif turn.active:
                self._provider = None
                self._ended_on_error = False
        if turn.retry_attempt:
            self._attempt = max(self._attempt, turn.retry_attempt)
        if turn.role == "assistant" and not turn.active:
            self._quiet = (turn.index, turn.id)  # where a retried step would sit: empty
        elif turn.role == "assistant":
            self._quiet = (-1, "")

    def _failure(self, call: Call, turn: Turn) -> None:
        th = self.th
        run = self._run
        if run is None:
            run = self._run = _Count(turn.index)
        run.add(turn.id, call.part_id)
        v, s = grade(run.n, th.fail_run_suspect, th.fail_run_stuck)
        self._best.offer(v, s, run.n, run.start, lambda: self._ev("failing_calls", run, turn))
        key = _key(call)
        counts = self._by_tool.setdefault(call.tool, {})
        same = counts.get(key)
        if same is None:
            same = counts[key] = _Count(turn.index)
        same.add(turn.id, call.part_id)
        v, s = grade(same.n, th.same_error_suspect, th.same_error_stuck)
        self._best.offer(v, s, same.n, same.start, lambda: self._ev("same_error", same, turn, key))

    def _ev(self, kind: RetrySignal, c: _Count, turn: Turn, key: str = "") -> RetryEvidence:
        ev: RetryEvidence = {"signal": kind, "count": c.n, "message_ids": list(c.ids)}
        if c.parts and c.parts[0]:
            ev["part_ids"] = list(c.parts)
        if key:
            ev["error"] = key
        if kind == "provider_errors":
            ev["error"] = turn.error
        return ev

    def status(self, sample: StatusSample) -> None:
        self._last_status = sample.type
        if sample.type == "retry" and sample.attempt > self._attempt:
            self._attempt = sample.attempt
            self._retry_msg = sample.message[:300]

    def finding(self) -> Finding:
        f = self._best.finding(self.name)
        if self._attempt:
            th = self.th
            v, s = grade(self._attempt, th.retry_attempt_suspect, th.retry_attempt_stuck)
            gave_up = self._ended_on_error and self._attempt >= th.retry_attempt_suspect
            # retried, then the step being retried ended empty and the session went idle: the
            # empty end is the retries' symptom (silent_stop's), the provider's answers its cause
            gave_up = gave_up or (self._last_status == "idle" and self._quiet[0] >= 0)
            if gave_up:  # retried, then the run ended on the provider's error: it never came back
                v, s = "stuck", 1.0
            if s > f.score or (gave_up and f.verdict != "stuck"):
                # OpenCode stores no trace of a retry: the step being retried is the empty one
                index, mid = self._quiet
                ev: RetriesEvidence = {
                    "signal": "retries",
                    "attempt": self._attempt,
                    "message": self._retry_msg,
                    "gave_up": gave_up,
                    "message_ids": [mid] if mid else [],
                }
                return Finding(self.name, v, s, ev, index)
        return f
