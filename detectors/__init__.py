"""octel detectors: pure, incremental scoring of stuck agents.

Feed a normalised message stream (`detectors.model`) to `score()` in one go, or to a `Probe`
message by message; both return the same findings. Built-in detectors register themselves in
`REGISTRY` through `register()`, exactly as an add-on would.
"""

from detectors import doom_loop as _doom_loop
from detectors import long_turn as _long_turn
from detectors import permission_deadlock as _permission_deadlock
from detectors import progress as _progress
from detectors import quiet as _quiet
from detectors import retry_cascade as _retry_cascade
from detectors import stall as _stall
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

del _doom_loop, _long_turn, _permission_deadlock, _progress, _quiet, _retry_cascade, _stall
