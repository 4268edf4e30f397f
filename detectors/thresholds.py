"""Named thresholds for every detector, with defaults and a one-line help each."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Thresholds"]


def _t(default: float, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Counts at which a pattern turns suspect or stuck. Change one with
    `Thresholds(doom_repeat_stuck=8)` or `Thresholds.from_mapping({...})`."""

    doom_repeat_suspect: int = _t(3, "identical tool calls in a row before suspect")
    doom_repeat_stuck: int = _t(4, "identical tool calls in a row before stuck")
    doom_fail_stuck: int = _t(3, "identical calls failing the same way in a row before stuck")
    doom_cycle_suspect: int = _t(3, "repetitions of a short cycle (A B A B...) before suspect")
    doom_cycle_stuck: int = _t(4, "repetitions of a short cycle before stuck")
    doom_max_period: int = _t(4, "longest cycle (in calls) looked for")
    poll_repeat_suspect: int = _t(25, "repetitions of a polling call (with sleep) before suspect")
    poll_repeat_stuck: int = _t(50, "repetitions of a polling call (with sleep) before stuck")
    fail_run_suspect: int = _t(4, "failing tool calls in a row before suspect")
    fail_run_stuck: int = _t(6, "failing tool calls in a row before stuck")
    same_error_suspect: int = _t(3, "same tool failing the same way (any arguments) before suspect")
    same_error_stuck: int = _t(5, "same tool failing the same way (any arguments) before stuck")
    provider_error_suspect: int = _t(2, "model steps ending in a provider error, in a row, before suspect")
    provider_error_stuck: int = _t(3, "model steps ending in a provider error, in a row, before stuck")
    retry_attempt_suspect: int = _t(3, "provider retry attempt (from status) before suspect")
    retry_attempt_stuck: int = _t(5, "provider retry attempt (from status) before stuck")
    permission_wait_stuck_s: float = _t(30.0, "seconds an ask may stay unanswered before stuck")
    denial_suspect: int = _t(3, "permission denials (rule or reply) before suspect")
    denial_stuck: int = _t(4, "permission denials (rule or reply) before stuck")
    empty_turn_suspect: int = _t(3, "turns with no text and no tool call in a row before suspect")
    empty_turn_stuck: int = _t(3, "turns with no text and no tool call in a row before stuck")
    monologue_suspect: int = _t(2, "the same text in a row (no tool call between) before suspect")
    monologue_stuck: int = _t(3, "the same text in a row before stuck")
    compaction_suspect: int = _t(2, "compactions or overflows without a file change before suspect")
    compaction_stuck: int = _t(2, "compactions or overflows without a file change before stuck")
    no_progress_min_steps: int = _t(12, "steps with tool calls and no file change before judging")
    no_progress_suspect: float = _t(0.5, "share of those calls already made before, for suspect")
    no_progress_stuck: float = _t(0.7, "share of those calls already made before, for stuck")
    doom_long_cycle_stuck: int = _t(3, "repetitions of a cycle of 3 or more calls before stuck")
    repeat_in_turn_suspect: int = _t(4, "the same sentence this often inside one turn before suspect")
    repeat_in_turn_stuck: int = _t(6, "the same sentence this often inside one turn before stuck")
    stale_poll_suspect: int = _t(8, "polls (a wait, then a check) in a row with nothing new before suspect")
    stale_poll_stuck: int = _t(12, "polls in a row with nothing new before stuck")
    no_progress_long_steps: int = _t(20, "steps without a file change that make a long run")
    no_progress_long_share: float = _t(0.15, "share of calls with no new fact that makes a long run stuck")
    stale_poll_patience_s: float = _t(
        120.0, "seconds slept in such polls past which only the poll_repeat limits apply"
    )

    @classmethod
    def help(cls) -> dict[str, str]:
        """Each setting's name and help text, in declaration order."""
        return {f.name: str(f.metadata["help"]) for f in dataclasses.fields(cls)}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Thresholds:
        """Defaults overridden by `values`; an unknown name is a ValueError."""
        names = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"unknown threshold(s): {', '.join(unknown)}")
        kw: dict[str, Any] = {}
        for k, v in values.items():
            kw[k] = float(v) if isinstance(names[k].default, float) else int(v)
        return cls(**kw)

    def to_dict(self) -> dict[str, float | int]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
