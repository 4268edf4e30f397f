"""Measure the detectors on labelled runs: recall, false alarms, the pattern named, and when.

Each run is replayed through a `Probe` message by message, as a live watcher would see it, to
find when each detector first fired and first reached stuck. A stuck run is caught when its
labelled detector ends stuck; a healthy run is a false alarm when any detector ends stuck (one
that ends suspect is counted apart). The pattern named is `dominant()` of the final findings.
The lag is how many assistant turns after the turn where the pattern began (`pattern_start` of
the label, else the finding's own start) the detector reached stuck; a run caught only after
the label's `pattern_end` is counted late, and `on_time` counts the caught runs called stuck
within `ON_TIME_TURNS` turns of the onset. The span overlap of a caught run is the intersection
over union of the labelled span (`pattern_start` to `pattern_end`, or the run's last message) and
the span the finding flags (its start to the run's last message, as it stays stuck once said).
Status samples and
permission events carry no message position, so they are fed after the last message: a
detector that needs them is charged the whole run (a pessimistic figure).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from detectors.base import REGISTRY, Registry
from detectors.findings import Finding, dominant
from detectors.model import Message, PermissionEvent, StatusSample
from detectors.probe import Probe
from detectors.score_docs import DetectorScoreDoc, EvaluationDoc
from detectors.thresholds import Thresholds

__all__ = [
    "HEALTHY",
    "ON_TIME_TURNS",
    "Evaluation",
    "LabelledRun",
    "RunResult",
    "evaluate",
    "span_overlap",
    "turns_between",
]

HEALTHY = "healthy"
ON_TIME_TURNS = 2  # the goal: stuck called within this many assistant turns of the onset


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
    pattern_start: int = -1  # message index where the stuck pattern began, when labelled
    # message index where it ended (a person stepped in, the run stopped); -1: to the run's end
    pattern_end: int = -1


@dataclass(frozen=True, slots=True)
class RunResult:
    name: str
    label: str
    fired: tuple[str, ...]  # detectors with a non-healthy final verdict
    first_fired: dict[str, int]  # detector -> messages seen when it first fired
    findings: tuple[Finding, ...]
    messages: int
    stuck: tuple[str, ...] = ()  # detectors with a stuck final verdict
    first_stuck: dict[str, int] = field(default_factory=dict)  # detector -> messages seen then
    named: str | None = None  # the dominant finding's detector
    lag: float | None = None  # messages from the pattern's start to stuck (caught runs)
    stuck_turn: dict[str, int] = field(default_factory=dict)  # detector -> assistant turn it said stuck
    # Detectors that said stuck at some point of the replay, even if not at the end: what a live
    # watcher would have shown (and acted on) while the run went on.
    ever_stuck: tuple[str, ...] = ()
    # Caught only after the labelled span had ended: too late for a watcher to help.
    after_end: bool = False
    overlap: float | None = None  # labelled span against the finding's, intersection over union

    @property
    def correct(self) -> bool:
        if self.label == HEALTHY:
            return not self.stuck
        return self.label in self.stuck


@dataclass(frozen=True, slots=True)
class Evaluation:
    detectors: tuple[DetectorScoreDoc, ...]  # as they are printed: one definition of a score
    runs: tuple[RunResult, ...]
    stuck_runs: int
    stuck_detected: int
    healthy_runs: int
    false_alarms: tuple[str, ...] = field(default=())
    suspect_healthy: tuple[str, ...] = field(default=())  # healthy runs something marked suspect
    # Healthy runs called stuck while they went on, though not at the end (a live alarm all the same).
    passing_alarms: tuple[str, ...] = field(default=())
    right_named: int = 0  # caught runs whose dominant finding is the labelled pattern
    mean_lag: float | None = None  # messages from the pattern's start to stuck
    mean_point: float | None = None  # share of the run seen when it turned stuck
    # caught runs called stuck within `ON_TIME_TURNS` assistant turns of the pattern's onset
    on_time: int = 0
    mean_overlap: float | None = None  # of the caught runs' `overlap`

    @property
    def stuck_recall(self) -> float | None:
        return self.stuck_detected / self.stuck_runs if self.stuck_runs else None

    @property
    def named_share(self) -> float | None:
        return self.right_named / self.stuck_detected if self.stuck_detected else None

    def to_dict(self) -> EvaluationDoc:
        return {
            "detectors": [d.copy() for d in self.detectors],
            "stuck_runs": self.stuck_runs,
            "stuck_detected": self.stuck_detected,
            "stuck_recall": self.stuck_recall,
            "healthy_runs": self.healthy_runs,
            "false_alarms": list(self.false_alarms),
            "suspect_healthy": list(self.suspect_healthy),
            "passing_alarms": list(self.passing_alarms),
            "right_named": self.right_named,
            "named_share": self.named_share,
            "mean_lag": self.mean_lag,
            "mean_point": self.mean_point,
            "on_time": self.on_time,
            "on_time_turns": ON_TIME_TURNS,
            "mean_overlap": self.mean_overlap,
            "runs": [
                {
                    "name": r.name,
                    "label": r.label,
                    "fired": list(r.fired),
                    "stuck": list(r.stuck),
                    "named": r.named,
                    "first_fired": r.first_fired,
                    "first_stuck": r.first_stuck,
                    "stuck_turn": r.stuck_turn,
                    "ever_stuck": list(r.ever_stuck),
                    "lag": r.lag,
                    "after_end": r.after_end,
                    "overlap": r.overlap,
                    "messages": r.messages,
                    "correct": r.correct,
                }
                for r in self.runs
            ],
        }


def _replay(run: LabelledRun, thresholds: Thresholds, registry: Registry) -> RunResult:
    probe = Probe(thresholds=thresholds, registry=registry)
    first: dict[str, int] = {}
    first_stuck: dict[str, int] = {}

    def note(found: list[Finding]) -> None:
        for f in found:
            first.setdefault(f.detector, probe.messages_seen)
            if f.verdict == "stuck":
                first_stuck.setdefault(f.detector, probe.messages_seen)

    for m in run.messages:
        probe.feed(m)
        note(probe.findings())
    for s in run.status:
        probe.feed_status(s)
    for e in run.permissions:
        probe.feed_permission(e)
    final = probe.findings()
    note(final)
    fired = tuple(f.detector for f in final)
    stuck = tuple(f.detector for f in final if f.verdict == "stuck")
    named = dominant(final)
    lag = overlap = None
    after_end = False
    if run.label in stuck:
        own = next(f for f in final if f.detector == run.label)
        start = run.pattern_start if run.pattern_start >= 0 else own.start_index
        lag = float(turns_between(run.messages, start, first_stuck[run.label]))
        after_end = 0 <= run.pattern_end < first_stuck[run.label] - 1
        last = len(run.messages) - 1
        end = run.pattern_end if run.pattern_end >= 0 else last
        overlap = span_overlap((start, end), (own.start_index, last))
    return RunResult(
        run.name,
        run.label,
        fired,
        {d: first[d] for d in fired},
        tuple(final),
        len(run.messages),
        stuck,
        {d: first_stuck[d] for d in stuck},
        named.detector if named is not None else None,
        lag,
        {d: turns_between(run.messages, -1, first_stuck[d]) for d in stuck},
        tuple(first_stuck),
        after_end,
        overlap,
    )


def span_overlap(a: tuple[int, int], b: tuple[int, int]) -> float:
    """Two spans of message indices (first, last; both included): intersection over union."""
    (a0, a1), (b0, b1) = (min(a), max(a)), (min(b), max(b))
    inter = max(0, min(a1, b1) - max(a0, b0) + 1)
    return inter / (max(a1, b1) - min(a0, b0) + 1)


def turns_between(messages: Sequence[Message], start: int, seen: int) -> int:
    """Assistant turns after message `start` among the first `seen` messages: how many more
    answers of the model a watcher read before the detector called the run stuck."""
    return sum(1 for m in messages[max(0, start + 1) : seen] if m.role == "assistant")


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
        tp = fp = fn = on_time = 0
        delays: list[float] = []
        fractions: list[float] = []
        for run, res in zip(runs, results, strict=True):
            expected = set() if run.label == HEALTHY else {run.label, *run.also}
            hit = name in res.stuck
            if hit and name in expected:
                tp += 1
            elif hit:
                fp += 1
            if run.label == name and not hit:
                fn += 1
            if run.label == name and hit and res.lag is not None:
                on_time += res.lag <= ON_TIME_TURNS and not res.after_end
                delays.append(res.lag)
                fractions.append(res.first_stuck[name] / max(1, res.messages))
        detected = sum(1 for r in runs if r.label == name) - fn
        scores.append(
            DetectorScoreDoc(
                detector=name,
                true_positives=tp,
                false_positives=fp,
                false_negatives=fn,
                precision=_ratio(tp, tp + fp),
                recall=_ratio(detected, detected + fn),
                delay_messages=_mean(delays),
                delay_fraction=_mean(fractions),
                max_delay_messages=max(delays) if delays else None,
                on_time=on_time,
            )
        )
    stuck = [r for r in results if r.label != HEALTHY]
    caught = [r for r in stuck if r.correct]
    healthy = [r for r in results if r.label == HEALTHY]
    return Evaluation(
        tuple(scores),
        tuple(results),
        len(stuck),
        len(caught),
        len(healthy),
        tuple(r.name for r in healthy if r.stuck),
        tuple(r.name for r in healthy if r.fired and not r.stuck),
        tuple(r.name for r in healthy if r.ever_stuck and not r.stuck),
        sum(1 for r in caught if r.named == r.label),
        _mean([r.lag for r in caught if r.lag is not None]),
        _mean([r.first_stuck[r.label] / max(1, r.messages) for r in caught]),
        sum(1 for r in caught if r.lag is not None and r.lag <= ON_TIME_TURNS and not r.after_end),
        _mean([r.overlap for r in caught if r.overlap is not None]),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
