"""Permission deadlock: a headless agent waiting for an answer that never comes.

Signals: a permission ask with no reply (stuck once it has waited `permission_wait_stuck_s`
in the status samples, or once the session went idle without an answer); repeated denials
(rejected asks and rule denials); tool calls left pending or running while the session idles.
"""

from __future__ import annotations

from detectors.base import EVIDENCE_IDS, Detector, Episode, register
from detectors.digest import Call, Turn
from detectors.evidence import DenialsEvidence, HangingCallsEvidence, UnansweredEvidence
from detectors.findings import Finding, Verdict, grade
from detectors.model import PermissionEvent, StatusSample
from detectors.thresholds import Thresholds

__all__ = ["PermissionDeadlock"]


@register(
    "permission_deadlock",
    "permission asks left unanswered, denials, calls hanging idle",
    stop_reason="permission_wait",
)
class PermissionDeadlock(Detector):
    name = "permission_deadlock"

    def __init__(self, thresholds: Thresholds) -> None:
        super().__init__(thresholds)
        self._asked: dict[str, PermissionEvent] = {}
        self._replied: set[str] = set()
        self._pending: set[str] = set()
        self._rejects: list[str] = []
        self._seen: dict[str, tuple[float, float]] = {}  # request id -> first, last sample t
        self._last_status = ""
        self._denials = 0
        self._denial_start = -1
        self._denial_ids: list[str] = []
        self._done_since_denial = 0  # calls that succeeded since the last denial
        # the longest run of denials so far, with where it began and its calls: what rejected
        # replies add to, so the count does not hang on how replies and messages interleave
        self._peak: tuple[int, int, tuple[str, ...]] = (0, -1, ())
        self._hanging: tuple[str, ...] = ()
        self._hanging_turn: tuple[int, str] = (-1, "")
        # Calls an ask may be holding up (pending, running, or cut short): call id -> message.
        self._waiting_calls: dict[str, int] = {}
        self._best = Episode()

    def feed(self, turn: Turn) -> None:
        for call in turn.calls:
            if call.call_id and (call.status in ("pending", "running") or call.interrupted):
                self._waiting_calls.setdefault(call.call_id, turn.index)
            if not call.denied:
                self._progress(call)
                continue
            self._done_since_denial = 0
            if self._denials == 0:
                self._denial_start = turn.index
            self._denials += 1
            if len(self._denial_ids) < EVIDENCE_IDS:
                self._denial_ids.append(call.part_id)
            if self._denials > self._peak[0]:
                self._peak = (self._denials, self._denial_start, tuple(self._denial_ids))
                self._offer_denials()
        self._hanging = tuple(c.part_id for c in turn.calls if c.status in ("pending", "running"))
        self._hanging_turn = (turn.index, turn.id)

    def _progress(self, call: Call) -> None:
        """A run of calls that succeed after a denial is the agent going on without what it was
        refused (a person who says no once in a while is no deadlock): the denials count anew.
        What was offered so far stays offered."""
        if call.status != "completed" or call.error_sig or self._denials == 0:
            return
        self._done_since_denial += 1
        if self._done_since_denial >= self.th.denial_reset_calls:
            self._denials, self._denial_start, self._denial_ids = 0, -1, []

    def _offer_denials(self) -> None:
        denials, start, ids = self._peak
        n = denials + len(self._rejects)
        v, s = grade(n, self.th.denial_suspect, self.th.denial_stuck)
        ev: DenialsEvidence = {
            "signal": "denials",
            "count": n,
            "part_ids": list(ids),
            "rejected_requests": list(self._rejects),
        }
        self._best.offer(v, s, n, start, lambda: ev)

    def permission(self, event: PermissionEvent) -> None:
        rid = event.request_id
        if event.kind == "asked":
            self._asked.setdefault(rid, event)
            if rid not in self._replied:
                self._pending.add(rid)
        else:
            self._replied.add(rid)
            self._pending.discard(rid)
            if event.reply == "reject" and len(self._rejects) < EVIDENCE_IDS:
                self._rejects.append(rid)
                self._offer_denials()

    def status(self, sample: StatusSample) -> None:
        self._last_status = sample.type
        if sample.t is None:
            return
        for rid in sample.pending_permissions:
            first, _ = self._seen.get(rid, (sample.t, sample.t))
            self._seen[rid] = (first, sample.t)

    def finding(self) -> Finding:
        best = self._best.finding(self.name)
        idle = self._last_status == "idle"
        if not self._pending and not (self._hanging and idle):
            return best
        found: list[Finding] = [best]
        if self._pending:
            found.append(self._unanswered(idle))
        if self._hanging and idle:
            hanging: HangingCallsEvidence = {
                "signal": "hanging_calls",
                "part_ids": list(self._hanging),
                "message_ids": [self._hanging_turn[1]],
            }
            found.append(Finding(self.name, "stuck", 1.0, hanging, self._hanging_turn[0]))
        return max(found, key=lambda f: f.score)

    def _unanswered(self, idle: bool) -> Finding:
        waits = {rid: self._wait(rid) for rid in sorted(self._pending)}
        longest = max(waits.values())
        limit = float(self.th.permission_wait_stuck_s)
        verdict: Verdict = "stuck" if idle or longest >= limit > 0 else "suspect"
        score = 1.0 if verdict == "stuck" else max(0.5, min(0.99, longest / limit if limit else 0))
        asks = [self._asked[r] for r in waits]
        ev: UnansweredEvidence = {
            "signal": "unanswered",
            "requests": list(waits)[:EVIDENCE_IDS],
            "permissions": sorted({a.permission for a in asks}),
            "patterns": sorted({p for a in asks for p in a.patterns})[:EVIDENCE_IDS],
            "call_ids": [a.call_id for a in asks if a.call_id][:EVIDENCE_IDS],
            "waited_s": round(longest, 3),
            "idle": idle,
        }
        starts = [self._waiting_calls[a.call_id] for a in asks if a.call_id in self._waiting_calls]
        return Finding(self.name, verdict, score, ev, min(starts, default=-1))

    def _wait(self, rid: str) -> float:
        first, last = self._seen.get(rid, (0.0, 0.0))
        return last - first
