"""Make the export test helpers, the archiver fakes and the e2e harness importable by name."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent

for _p in (_HERE, _TESTS, _TESTS / "archiver", _TESTS / "e2e"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
