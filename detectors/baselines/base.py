"""What every evaluation baseline is: fed messages in order, it remembers when it first fired."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from detectors.model import Message

__all__ = ["Baseline", "Fire"]


@dataclass(frozen=True, slots=True)
class Fire:
    """The first time a baseline said "stuck"."""

    rule: str  # the baseline's own name for the rule
    pattern: str  # the octel detector that rule stands for ("doom_loop", "monologue", ...)
    seen: int  # messages fed when it fired
    start_index: int  # message index where the repeated stretch began


class Baseline(Protocol):
    fired: Fire | None

    def feed(self, message: Message) -> None: ...
