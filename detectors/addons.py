"""Add-on detectors installed as packages, found through the `octel.detectors` entry points.

A package declares, in its `pyproject.toml`:

    [project.entry-points."octel.detectors"]
    turn_counter = "octel_turns.detector"

Loading the entry point imports that module (or object), which registers its detector with
`detectors.register(...)` exactly as a built-in does. Reading package metadata is the import
machinery's work, not data I/O: the detectors stay pure. An add-on that fails to load is kept as
a problem (its name and the error) and skipped, so one broken package never stops octel.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib.metadata import entry_points

__all__ = ["GROUP", "AddonProblem", "load"]

GROUP = "octel.detectors"

log = logging.getLogger("octel.detectors")


@dataclass(frozen=True, slots=True)
class AddonProblem:
    """An installed add-on that could not be loaded."""

    name: str
    target: str
    error: str


def load(group: str = GROUP) -> list[AddonProblem]:
    """Import every entry point of `group` once; return (and log) the ones that failed."""
    problems: list[AddonProblem] = []
    for ep in sorted(entry_points(group=group), key=lambda e: e.name):
        try:
            ep.load()
        except Exception as exc:  # any error of foreign code: report it, load the rest
            problem = AddonProblem(ep.name, ep.value, f"{type(exc).__name__}: {exc}")
            log.warning("octel: add-on detector %s (%s) not loaded: %s", ep.name, ep.value, problem.error)
            problems.append(problem)
    return problems
