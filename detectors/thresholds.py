"""Named thresholds for every detector, with defaults and a one-line help each."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Threshold", "Thresholds", "before_first_use", "declare", "withdraw"]


def _t(default: float, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True, slots=True)
class Threshold:
    """A threshold an add-on detector declares when it registers: its default and one line of help."""

    default: float
    help: str


# Thresholds declared through the registry (`detectors.register(..., thresholds=...)`), so that
# `from_mapping`, `help` and `to_dict` know an add-on's names exactly as they know the built-ins.
_DECLARED: dict[str, Threshold] = {}
# Run once before declared names are first read: the registry loads installed add-ons here, so a
# `-t addon_name=…` given before any detector ran is known all the same.
_BEFORE_FIRST_USE: list[Callable[[], object]] = []


def before_first_use(hook: Callable[[], object]) -> None:
    _BEFORE_FIRST_USE.append(hook)


def _declared() -> dict[str, Threshold]:
    while _BEFORE_FIRST_USE:
        _BEFORE_FIRST_USE.pop(0)()
    return _DECLARED


def declare(name: str, threshold: Threshold) -> None:
    """Make `name` a threshold every `Thresholds` accepts; a name already in use is a ValueError."""
    if name in _builtin() or name in _DECLARED:
        raise ValueError(f"a threshold named {name!r} already exists")
    _DECLARED[name] = threshold


def withdraw(name: str) -> None:
    _DECLARED.pop(name, None)


def _builtin() -> dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(Thresholds) if f.name != "extra"}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Counts at which a pattern turns suspect or stuck. Change one with
    `Thresholds(doom_repeat_stuck=8)` or `Thresholds.from_mapping({...})`. Add-on detectors
    read the thresholds they declared with `get(name)`."""

    # Values given for declared (add-on) thresholds, as (name, value) pairs: hashable like the rest.
    extra: tuple[tuple[str, float], ...] = field(default=(), metadata={"help": ""})

    doom_repeat_suspect: int = _t(3, "identical tool calls in a row before suspect")
    doom_repeat_stuck: int = _t(4, "identical tool calls in a row before stuck")
    doom_fail_stuck: int = _t(3, "identical calls failing the same way in a row before stuck")
    doom_repeat_turns_stuck: int = _t(
        3, "turns in a row making the same call and getting the same answer, before stuck"
    )
    doom_cycle_suspect: int = _t(3, "repetitions of a short cycle (A B A B...) before suspect")
    doom_cycle_stuck: int = _t(4, "repetitions of a short cycle before stuck")
    doom_max_period: int = _t(4, "longest cycle (in calls) looked for")
    poll_repeat_suspect: int = _t(25, "repetitions of a polling call (with sleep) before suspect")
    poll_repeat_stuck: int = _t(50, "repetitions of a polling call (with sleep) before stuck")
    fail_run_suspect: int = _t(4, "failing tool calls in a row before suspect")
    fail_run_stuck: int = _t(6, "failing tool calls in a row before stuck")
    same_error_suspect: int = _t(3, "same tool failing the same way (any arguments) before suspect")
    same_error_stuck: int = _t(3, "same tool failing the same way (any arguments) before stuck")
    provider_error_suspect: int = _t(2, "model steps ending in a provider error, in a row, before suspect")
    provider_error_stuck: int = _t(3, "model steps ending in a provider error, in a row, before stuck")
    retry_attempt_suspect: int = _t(3, "provider retry attempt (from status) before suspect")
    retry_attempt_stuck: int = _t(5, "provider retry attempt (from status) before stuck")
    permission_wait_stuck_s: float = _t(30.0, "seconds an ask may stay unanswered before stuck")
    denial_suspect: int = _t(3, "permission denials (rule or reply) before suspect")
    denial_stuck: int = _t(3, "permission denials (rule or reply) before stuck")
    denial_reset_calls: int = _t(3, "calls that succeed after a denial before the denials count anew")
    empty_turn_suspect: int = _t(3, "turns with no text and no tool call in a row before suspect")
    empty_turn_stuck: int = _t(3, "turns with no text and no tool call in a row before stuck")
    monologue_suspect: int = _t(2, "the same text in a row (no tool call between) before suspect")
    monologue_stuck: int = _t(2, "the same text in a row before stuck")
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
    doom_flip_stuck: int = _t(2, "edits undone and made again (A to B, back to A, to B again) before stuck")
    doom_same_cycle_calls: int = _t(
        6, "calls round a cycle (two rounds at least) whose answers never change, before stuck"
    )
    stale_poll_patience_s: float = _t(
        120.0, "seconds slept in such polls past which only the poll_repeat limits apply"
    )
    no_progress_same_stuck: int = _t(
        4, "calls repeating an earlier one with the same answer, for stuck sooner"
    )
    no_progress_same_share: float = _t(0.33, "share of the calls those repeats must make, for stuck sooner")
    no_progress_replan_stuck: int = _t(
        3, "rewrites of the same todo list, more than the new facts found meanwhile, before stuck"
    )
    no_progress_replan_idle_stuck: int = _t(
        2, "rewrites of the same todo list in a row, nothing found since it was written, before stuck"
    )
    announce_stop_stuck: int = _t(
        2, 'turns ending on an announcement ("let me …") with nothing done, before stuck'
    )
    thrash_fail_stuck: int = _t(
        5, "failures of one command with the same answer, small edits between, unresolved, before stuck"
    )

    @classmethod
    def help(cls) -> dict[str, str]:
        """Each setting's name and help text: the built-ins in declaration order, then add-ons'."""
        out = {name: str(f.metadata["help"]) for name, f in _builtin().items()}
        return out | {name: t.help for name, t in _declared().items()}

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> Thresholds:
        """Defaults overridden by `values`; an unknown name is a ValueError."""
        names, declared = _builtin(), _declared()
        unknown = sorted(set(values) - set(names) - set(declared))
        if unknown:
            raise ValueError(f"unknown threshold(s): {', '.join(unknown)}")
        kw: dict[str, Any] = {}  # each built-in its own type: int or float, as its default
        extra: list[tuple[str, float]] = []
        for k, v in values.items():
            default = names[k].default if k in names else declared[k].default
            value = float(v) if isinstance(default, float) else int(v)
            if k in names:
                kw[k] = value
            else:
                extra.append((k, value))
        return cls(**kw, extra=tuple(sorted(extra)))

    def get(self, name: str) -> float:
        """A threshold by name, built-in or declared by an add-on (its default unless given)."""
        declared = _declared()
        if name in declared:
            return dict(self.extra).get(name, declared[name].default)
        if name == "extra" or name not in _builtin():
            raise KeyError(name)
        value: float = getattr(self, name)
        return value

    def to_dict(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {name: getattr(self, name) for name in _builtin()}
        return out | {name: self.get(name) for name in _declared()}
