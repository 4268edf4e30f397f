"""octel detectors: pure, incremental scoring of stuck agents.

Feed a normalised message stream (`detectors.model`) to `score()` in one go, or to a `Probe`
message by message; both return the same findings. Built-in detectors register themselves in
`REGISTRY` through `register()`, exactly as an add-on would; the registry imports them when it
is first used.

The names below are imported when first read, so importing one small module of the package
(`detectors.findings` for a verdict's name) does not load the detectors.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from detectors.base import REGISTRY, Detector, DetectorSpec, Registry, register
    from detectors.findings import VERDICTS, Finding, Verdict, dominant, worst_verdict
    from detectors.probe import Probe, score
    from detectors.thresholds import Thresholds

__all__ = [
    "REGISTRY",
    "VERDICTS",
    "Detector",
    "DetectorSpec",
    "Finding",
    "Probe",
    "Registry",
    "Thresholds",
    "Verdict",
    "dominant",
    "register",
    "score",
    "worst_verdict",
]

_HOME = {
    **dict.fromkeys(("REGISTRY", "Detector", "DetectorSpec", "Registry", "register"), "detectors.base"),
    **dict.fromkeys(("VERDICTS", "Finding", "Verdict", "dominant", "worst_verdict"), "detectors.findings"),
    **dict.fromkeys(("Probe", "score"), "detectors.probe"),
    "Thresholds": "detectors.thresholds",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'detectors' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
