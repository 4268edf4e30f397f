"""What a detector returns: a verdict, a score and the evidence for it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict, get_args

if TYPE_CHECKING:  # a verdict's name alone loads nothing more
    from detectors.evidence import Evidence

__all__ = [
    "DOMINANCE",
    "VERDICTS",
    "Finding",
    "FindingDict",
    "Verdict",
    "dominant",
    "dominant_of",
    "grade",
    "rank_key",
    "worst_verdict",
]

Verdict = Literal["healthy", "suspect", "stuck"]
# Ordered from best to worst; worst_verdict and the CLI rely on this order.
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
_RANK: dict[str, int] = {v: i for i, v in enumerate(VERDICTS)}


class FindingDict(TypedDict):
    """A finding as archives, the store and `octel detect --json` keep it."""

    detector: str
    verdict: Verdict
    score: float
    evidence: Evidence
    start_index: int


@dataclass(frozen=True, slots=True)
class Finding:
    """One detector's judgement of a stream.

    `evidence` is JSON-serialisable (message ids, part ids, the repeated signature, counts);
    `start_index` is the index of the message where the pattern began (-1 when none did).
    """

    detector: str
    verdict: Verdict
    score: float
    evidence: Evidence = field(default_factory=dict)
    start_index: int = -1

    def to_dict(self) -> FindingDict:
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


# When several detectors fire, the one named is the cause rather than its symptoms: a retry
# storm ends in an empty turn (silent_stop), a repeated plan runs into the output limit, a
# doom loop also makes no progress. Earlier in this list wins among equal verdicts; a detector
# not listed (an add-on) ranks after these.
DOMINANCE: tuple[str, ...] = (
    "permission_deadlock",
    "command_timeout",
    "doom_loop",
    "retry_cascade",
    "compaction_loop",
    "turn_repetition",
    "monologue",
    "empty_reasoning",
    "no_progress",
    "output_limit",
    "silent_stop",
)
_PRIORITY = {name: i for i, name in enumerate(DOMINANCE)}


def rank_key(detector: str, verdict: str, score: float) -> tuple[int, int, float, str]:
    """The one order findings are ranked in, worst first: the worst verdict, then the cause
    before its symptoms (`DOMINANCE`), then the higher score, then the name. Total, so the
    headline of the same findings is the same whatever order they came in."""
    return (-_RANK.get(verdict, 0), _PRIORITY.get(detector, len(_PRIORITY)), -score, detector)


def dominant(findings: Iterable[Finding]) -> Finding | None:
    """The finding that names the run's pattern (first by `rank_key`); None when nothing fired."""
    fired = [f for f in findings if f.verdict != "healthy"]
    if not fired:
        return None
    return min(fired, key=lambda f: rank_key(f.detector, f.verdict, f.score))


def _key_of(f: Mapping[str, Any]) -> tuple[int, int, float, str]:
    score = f.get("score")
    num = float(score) if isinstance(score, int | float) and not isinstance(score, bool) else 0.0
    return rank_key(str(f.get("detector") or ""), str(f.get("verdict") or ""), num)


def dominant_of(findings: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """`dominant` for findings as dicts (`Finding.to_dict()`, a stored row): the archive, the
    live board and `octel why` name the same pattern for the same findings."""
    fired = [f for f in findings if f.get("verdict") in ("suspect", "stuck")]
    return min(fired, key=_key_of) if fired else None


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
