"""Scenario scripts of the replica held-out set (`tests/corpus/real/replica/`): the fresh set's
scripts (`real_fresh*.py`) drawn again under new names.

Each run's name seeds its random choices (the look-arounds before the pattern, the words and
reasoning between calls, argument shapes, how many turns), so the same scripts under new names
give new runs of the same shapes: every pattern, five runs each, and the same 30 hard
negatives. Recorded and frozen after `no_progress` learnt its sooner signals and before any
detector ran on them, because the fresh set's own figures had been seen a second time.
"""

from __future__ import annotations

from typing import Any

import real_fresh
from real_fresh_ok import fresh_healthy_runs
from real_steps import Steps

__all__ = ["replica_runs"]


def _renamed(self: Steps, name: str, project: str) -> None:
    Steps.__init__(self, "rp_" + name.removeprefix("fr_"), project)


def replica_runs(project: str) -> list[dict[str, Any]]:
    init = real_fresh.FreshSteps.__init__
    setattr(real_fresh.FreshSteps, "__init__", _renamed)  # noqa: B010 - every fresh script builds through it
    try:
        return real_fresh.fresh_stuck_runs(project) + fresh_healthy_runs(project)
    finally:
        setattr(real_fresh.FreshSteps, "__init__", init)  # noqa: B010
