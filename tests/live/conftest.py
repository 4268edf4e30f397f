"""Make tests/ helpers (realparts, the e2e harness) importable by name from the live tests."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent

for _p in (_HERE, _TESTS, _TESTS / "e2e", _TESTS / "metrics", _TESTS / "claude"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
