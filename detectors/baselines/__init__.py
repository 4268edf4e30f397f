"""Evaluation baselines: other projects' stuck rules, re-implemented over octel's message model.

These are **not detectors**. They are never registered, never scored on an archive or a live
session; only `octel detect --eval --baselines` runs them, beside octel's own detectors, on the
same labelled runs, so the evaluation can say how octel compares with what a team would
otherwise have:

- `openhands`: OpenHands' `StuckDetector` (openhands/controller/stuck.py): the same action and
  observation four times, the same action ending in an error three times, the same agent
  message three times with nothing observed between (monologue), two actions alternating
  with their observations over the last six steps, ten context condensations in a row.
- `opencode_guard`: OpenCode's own doom-loop guard (the `doom_loop` permission check in its
  session processor): the same tool with the same input three parts in a row within one
  assistant message.

Each baseline takes messages one at a time (`feed`) and keeps the first time it fired
(`fired`): when, which rule, which octel pattern that rule stands for, and where the repeated
stretch began. Pure, standard library only, like the detectors.
"""

from __future__ import annotations

from collections.abc import Callable

from detectors.baselines.base import Baseline, Fire
from detectors.baselines.compare import BaselineScore, evaluate_baseline
from detectors.baselines.opencode_guard import OpenCodeDoomGuard
from detectors.baselines.openhands import OpenHandsStuck

__all__ = ["BASELINES", "Baseline", "BaselineScore", "Fire", "evaluate_baseline"]

# name -> (what it is, a fresh instance)
BASELINES: dict[str, tuple[str, Callable[[], Baseline]]] = {
    "openhands": ("OpenHands StuckDetector rules", OpenHandsStuck),
    "opencode_guard": ("OpenCode doom_loop guard (3 identical calls in one message)", OpenCodeDoomGuard),
}
