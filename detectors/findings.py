"""What a detector returns: a verdict, a score and the evidence for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["VERDICTS", "Finding", "Verdict", "grade", "worst_verdict"]

Verdict = Literal["healthy", "suspect", "stuck"]
# Ordered from best to worst; worst_verdict and the CLI rely on this order.
VERDICTS: tuple[Verdict, ...] = ("healthy", "suspect", "stuck")
_RANK = {v: i for i, v in enumerate(VERDICTS)}


@dataclass(frozen=True, slots=True)
class Finding:
    """One detector's judgement of a stream.

    `evidence` is JSON-serialisable (message ids, part ids, the repeated signature, counts);
    `start_index` is the index of the message where the pattern began (-1 when none did).
    """

    detector: str
    verdict: Verdict
    score: float
    evidence: Mapping[str, Any] = field(default_factory=dict)
    start_index: int = -1

    def to_dict(self) -> dict[str, Any]:
        return {
            "detector": self.detector,
            "verdict": self.verdict,
            "score": round(self.score, 4),
            "evidence": dict(self.evidence),
            "start_index": self.start_index,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Finding:
        """The finding `to_dict()` wrote (an unknown verdict reads as healthy)."""
        verdict = d.get("verdict")
        evidence = d.get("evidence")
        return cls(
            str(d.get("detector", "")),
            verdict if verdict in _RANK else "healthy",
            float(d.get("score") or 0.0),
            dict(evidence) if isinstance(evidence, Mapping) else {},
            int(d.get("start_index", -1)),
        )


def worst_verdict(findings: Iterable[Finding]) -> Verdict:
    """The worst verdict among findings; "healthy" when there are none."""
    worst = 0
    for f in findings:
        worst = max(worst, _RANK.get(f.verdict, 0))
    return VERDICTS[worst]


def grade(value: float, suspect: float, stuck: float) -> tuple[Verdict, float]:
    """Verdict and score for a count against its two thresholds.

    The score rises linearly to 1 at the stuck threshold, so it crosses suspect/stuck exactly
    where the verdict changes and a shorter run always scores lower.
    """
    if value <= 0 or stuck <= 0:
        return "healthy", 0.0
    score = min(1.0, value / stuck)
    if value >= stuck:
        return "stuck", score
    if value >= suspect:
        return "suspect", score
    return "healthy", score
