"""The JSON shapes of an evaluation: what ``octel detect eval`` prints and benchmarks keep."""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "BaselineScoreDoc",
    "ComparedReport",
    "DetectorScoreDoc",
    "EvaluationDoc",
    "EvaluationReport",
    "RunResultDoc",
]


class DetectorScoreDoc(TypedDict):
    """One detector's score on a set: what `evaluate` computes and the report prints."""

    detector: str
    true_positives: int
    false_positives: int
    false_negatives: int
    precision: float | None
    recall: float | None
    # Mean over detected runs: messages seen after the pattern began, and share of the run seen.
    delay_messages: float | None
    delay_fraction: float | None
    max_delay_messages: float | None  # the longest of those lags
    on_time: int  # detected runs called stuck within `ON_TIME_TURNS` turns of the onset


class RunResultDoc(TypedDict):
    name: str
    label: str
    fired: list[str]
    stuck: list[str]
    named: str | None
    first_fired: dict[str, int]
    first_stuck: dict[str, int]
    stuck_turn: dict[str, int]
    ever_stuck: list[str]
    lag: float | None
    after_end: bool
    overlap: float | None
    messages: int
    correct: bool


class EvaluationDoc(TypedDict):
    detectors: list[DetectorScoreDoc]
    stuck_runs: int
    stuck_detected: int
    stuck_recall: float | None
    healthy_runs: int
    false_alarms: list[str]
    suspect_healthy: list[str]
    passing_alarms: list[str]
    right_named: int
    named_share: float | None
    mean_lag: float | None
    mean_point: float | None
    on_time: int
    on_time_turns: int
    mean_overlap: float | None
    runs: list[RunResultDoc]


class BaselineScoreDoc(TypedDict):
    name: str
    stuck_runs: int
    flagged: int
    right_pattern: int
    healthy_runs: int
    false_alarms: list[str]
    mean_lag: float | None
    max_lag: float | None
    mean_point: float | None
    recall: float | None


class EvaluationReport(EvaluationDoc):
    """One corpus set's evaluation as ``octel detect eval --json`` prints it."""

    title: str


class ComparedReport(EvaluationReport):
    """An evaluation beside the baselines' scores on the same set (``--compare``)."""

    baselines: list[BaselineScoreDoc]
