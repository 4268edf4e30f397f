"""Score a baseline, and octel beside it, in the same terms on the same labelled runs.

A stuck run is **flagged** when the baseline fired at all (whatever rule), and the **right
pattern** is named when the rule stands for the labelled detector; a healthy run it fires on is
a **false alarm**. The **lag** counts assistant turns from where the pattern began (the label's
`pattern_start`, else where the baseline's stretch began) to the message after which it fired,
as `detectors.evaluation` counts octel's. octel's own row uses the same terms: flagged when any
detector ended stuck, the right pattern when the dominant finding is the labelled one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from detectors.baselines.base import Baseline
from detectors.evaluation import HEALTHY, Evaluation, LabelledRun, turns_between
from detectors.score_docs import BaselineScoreDoc

__all__ = ["BaselineScore", "evaluate_baseline", "octel_row"]


@dataclass(frozen=True, slots=True)
class BaselineScore:
    name: str
    stuck_runs: int
    flagged: int  # stuck runs it fired on
    right_pattern: int  # of those, with the labelled pattern
    healthy_runs: int
    false_alarms: tuple[str, ...]
    mean_lag: float | None  # assistant turns from the pattern's start, over flagged runs
    max_lag: float | None
    mean_point: float | None  # share of the run seen when it fired

    @property
    def recall(self) -> float | None:
        return self.flagged / self.stuck_runs if self.stuck_runs else None

    def to_dict(self) -> BaselineScoreDoc:
        return BaselineScoreDoc(
            name=self.name,
            stuck_runs=self.stuck_runs,
            flagged=self.flagged,
            right_pattern=self.right_pattern,
            healthy_runs=self.healthy_runs,
            false_alarms=list(self.false_alarms),
            mean_lag=self.mean_lag,
            max_lag=self.max_lag,
            mean_point=self.mean_point,
            recall=self.recall,
        )


def evaluate_baseline(name: str, runs: Iterable[LabelledRun], make: Callable[[], Baseline]) -> BaselineScore:
    flagged = right = 0
    alarms: list[str] = []
    lags: list[float] = []
    points: list[float] = []
    stuck_runs = healthy_runs = 0
    for run in runs:
        b = make()
        for m in run.messages:
            b.feed(m)
            if b.fired is not None:
                break
        fire = b.fired
        if run.label == HEALTHY:
            healthy_runs += 1
            if fire is not None:
                alarms.append(run.name)
            continue
        stuck_runs += 1
        if fire is None:
            continue
        flagged += 1
        right += fire.pattern == run.label
        start = run.pattern_start if run.pattern_start >= 0 else fire.start_index
        lags.append(float(turns_between(run.messages, start, fire.seen)))
        points.append(fire.seen / max(1, len(run.messages)))
    return BaselineScore(
        name,
        stuck_runs,
        flagged,
        right,
        healthy_runs,
        tuple(alarms),
        _mean(lags),
        max(lags) if lags else None,
        _mean(points),
    )


def octel_row(ev: Evaluation) -> BaselineScore:
    """octel's detectors in the baselines' terms (flagged: any detector ended stuck)."""
    stuck = [r for r in ev.runs if r.label != HEALTHY and r.stuck]
    lags = [r.lag for r in stuck if r.lag is not None]
    points = [min(r.first_stuck.values()) / max(1, r.messages) for r in stuck]
    return BaselineScore(
        "octel",
        ev.stuck_runs,
        len(stuck),
        sum(1 for r in stuck if r.named == r.label),
        ev.healthy_runs,
        ev.false_alarms,
        _mean(lags),
        max(lags) if lags else None,
        _mean(points),
    )


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None
