"""Thrash: one command failing with the same answer again and again, small edits between.

doom_loop's runs end at every file change, since test -> fix -> test is how work gets done. A
fix that changes nothing the command sees is not: the same build or test run, failing with the
same answer (its start and its summary, noise blanked), counts on across edits and other calls
until it succeeds or fails differently. Only an unresolved thrash is judged: a build that failed
four times and then passed was being fixed, and says nothing once it passes.
"""

from __future__ import annotations

from detectors.base import EVIDENCE_IDS
from detectors.digest import Call, Turn, output_shape
from detectors.evidence import ThrashEvidence
from detectors.findings import Finding, grade

__all__ = ["Thrash"]


# Tries further apart than this many calls are not one thrash: a suite run now and then in a
# long session, failing the same known way, is not being retried.
_GAP = 4


class _Tries:
    __slots__ = ("ids", "last", "n", "parts", "shape", "start")

    def __init__(self, shape: str, start: int) -> None:
        self.last = 0  # the call count at the last try
        self.shape = shape
        self.n = 0
        self.start = start
        self.ids: list[str] = []
        self.parts: list[str] = []


class Thrash:
    """Fed doom_loop's calls; `finding` is the worst unresolved thrash now (None if none)."""

    def __init__(self, stuck: int) -> None:
        self._stuck = max(2, stuck)
        self._by_sig: dict[str, _Tries] = {}  # command -> its failures since it last worked
        self._top: str | None = None  # the command with the most failures, kept as they come
        self._calls = 0

    def call(self, call: Call, turn: Turn) -> None:
        self._calls += 1
        if call.wait or call.status in ("pending", "running") or call.interrupted or call.denied:
            return
        if not call.error_sig:
            if self._by_sig.pop(call.sig, None) is not None and self._top == call.sig:
                self._top = max(self._by_sig, key=lambda k: self._by_sig[k].n, default=None)
            return
        shape = output_shape(call.output_head) + "\x00" + output_shape(call.output_tail)
        tries = self._by_sig.get(call.sig)
        if tries is None or tries.shape != shape or self._calls - tries.last > _GAP:
            # failing differently (something moved), or only now and then
            tries = self._by_sig[call.sig] = _Tries(shape, turn.index)
        tries.n += 1
        tries.last = self._calls
        if len(tries.ids) < EVIDENCE_IDS and (not tries.ids or tries.ids[-1] != turn.id):
            tries.ids.append(turn.id)
        if len(tries.parts) < EVIDENCE_IDS:
            tries.parts.append(call.part_id)
        top = self._by_sig.get(self._top) if self._top is not None else None
        if top is None or tries.n > top.n:
            self._top = call.sig

    def finding(self, name: str) -> Finding | None:
        tries = self._by_sig.get(self._top) if self._top is not None else None
        if tries is None:
            return None
        v, s = grade(tries.n, self._stuck - 1, self._stuck)
        ev: ThrashEvidence = {
            "signal": "thrash",
            "period": 1,
            "repetitions": tries.n,
            "signature": [str(self._top).replace("\x00", " ", 1)[:300]],
            "same_failure": tries.shape.split("\x00", 1)[0][:160] or None,
            "active": True,
            "message_ids": list(tries.ids),
            "part_ids": list(tries.parts),
        }
        return Finding(name, v, s, ev, tries.start)
