"""Measure the detectors on labelled runs: precision, recall and detection delay.

Each run is replayed through a `Probe` message by message, as a live watcher would see it, to
find when each detector first fired. Status samples and permission events carry no message
position, so they are fed after the last message: a detector that needs them is charged the
whole run as delay (a pessimistic figure).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from detectors.base import REGISTRY, Registry
from detectors.findings import Finding
from detectors.model import Message, PermissionEvent, StatusSample
from detectors.probe import Probe
from detectors.thresholds import Thresholds

__all__ = ["DetectorScore", "Evaluation", "LabelledRun", "RunResult", "evaluate"]

HEALTHY = "healthy"


@dataclass(frozen=True, slots=True)
class LabelledRun:
    """A recorded run and what a person says it shows: "healthy" or the expected detector,
    plus `also`: other detectors that may fairly fire on it."""

    name: str
    label: str
    messages: Sequence[Message]
    status: Sequence[StatusSample] = ()
    permissions: Sequence[PermissionEvent] = ()
    also: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RunResult:
    name: str
    label: str
    fired: tuple[str, ...]  # detectors with a non-healthy final verdict
    first_fired: dict[str, int]  # detector -> messages seen when it first fired
    findings: tuple[Finding, ...]
    messages: int

    @property
    def correct(self) -> bool:
        if self.label == HEALTHY:
            return not self.fired
        return self.label in self.fired


@dataclass(frozen=True, slots=True)
class DetectorScore:
    detector: str
    true_positives: int
    false_positives: int
    false_negatives: int
    precision: float | None
    recall: float | None
    # Mean over detected runs: messages seen after the pattern began, and share of the run seen.
    delay_messages: float | None
    delay_fraction: float | None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


@dataclass(frozen=True, slots=True)
class Evaluation:
    detectors: tuple[DetectorScore, ...]
    runs: tuple[RunResult, ...]
    stuck_runs: int
    stuck_detected: int
    healthy_runs: int
    false_alarms: tuple[str, ...] = field(default=())

    @property
    def stuck_recall(self) -> float | None:
        return self.stuck_detected / self.stuck_runs if self.stuck_runs else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "detectors": [d.to_dict() for d in self.detectors],
            "stuck_runs": self.stuck_runs,
            "stuck_detected": self.stuck_detected,
            "stuck_recall": self.stuck_recall,
            "healthy_runs": self.healthy_runs,
            "false_alarms": list(self.false_alarms),
            "runs": [
                {
                    "name": r.name,
                    "label": r.label,
                    "fired": list(r.fired),
                    "first_fired": r.first_fired,
                    "messages": r.messages,
                    "correct": r.correct,
                }
                for r in self.runs
            ],
        }


def _replay(run: LabelledRun, thresholds: Thresholds, registry: Registry) -> RunResult:
    probe = Probe(thresholds=thresholds, registry=registry)
    first: dict[str, int] = {}
    for m in run.messages:
        probe.feed(m)
        for f in probe.findings():
            first.setdefault(f.detector, probe.messages_seen)
    for s in run.status:
        probe.feed_status(s)
    for e in run.permissions:
        probe.feed_permission(e)
    final = probe.findings()
    for f in final:
        first.setdefault(f.detector, probe.messages_seen)
    fired = tuple(f.detector for f in final)
    return RunResult(
        run.name,
        run.label,
        fired,
        {d: first[d] for d in fired},
        tuple(final),
        len(run.messages),
    )


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def evaluate(
    runs: Iterable[LabelledRun],
    *,
    thresholds: Thresholds | None = None,
    registry: Registry | None = None,
) -> Evaluation:
    th = thresholds or Thresholds()
    reg = registry or REGISTRY
    runs = list(runs)
    results = [_replay(r, th, reg) for r in runs]
    scores = []
    for name in reg.names():
        tp = fp = fn = 0
        delays: list[float] = []
        fractions: list[float] = []
        for run, res in zip(runs, results, strict=True):
            expected = set() if run.label == HEALTHY else {run.label, *run.also}
            hit = name in res.fired
            if hit and name in expected:
                tp += 1
            elif hit:
                fp += 1
            if run.label == name and not hit:
                fn += 1
            if run.label == name and hit:
                seen = res.first_fired[name]
                start = next(f.start_index for f in res.findings if f.detector == name)
                delays.append(float(max(0, seen - 1 - start)) if start >= 0 else float(seen))
                fractions.append(seen / max(1, res.messages))
        detected = sum(1 for r in runs if r.label == name) - fn
        scores.append(
            DetectorScore(
                name,
                tp,
                fp,
                fn,
                _ratio(tp, tp + fp),
                _ratio(detected, detected + fn),
                sum(delays) / len(delays) if delays else None,
                sum(fractions) / len(fractions) if fractions else None,
            )
        )
    stuck = [r for r in results if r.label != HEALTHY]
    return Evaluation(
        tuple(scores),
        tuple(results),
        len(stuck),
        sum(1 for r in stuck if r.correct),
        len(results) - len(stuck),
        tuple(r.name for r in results if r.label == HEALTHY and r.fired),
    )
