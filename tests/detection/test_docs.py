"""docs/detectors.md keeps up with the code: every threshold (default and meaning) and every
built-in detector is documented."""

from __future__ import annotations

import re
from pathlib import Path

from detectors import REGISTRY, Thresholds

DOC = (Path(__file__).parents[2] / "docs" / "detectors.md").read_text()


def test_every_threshold_is_documented_with_its_default() -> None:
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \| [^|]+ \|$", DOC, re.M))
    defaults = Thresholds().to_dict()
    assert set(rows) == set(defaults)
    for name, value in defaults.items():
        assert rows[name].strip() == str(value), name
    for name, help_text in Thresholds.help().items():
        assert f"| `{name}` | {defaults[name]} | {help_text} |" in DOC


def test_every_detector_has_a_section() -> None:
    sections = set(re.findall(r"^### (\w+)$", DOC, re.M))
    assert set(REGISTRY.names()) <= sections
