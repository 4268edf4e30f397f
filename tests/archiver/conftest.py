"""Make the archiver test helpers (and tests/realparts.py) importable by name.

The root conftest imports the real packages before tests/ joins sys.path, so a test folder
named like a package never stands in for it.
"""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent


for _p in (_HERE, _TESTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
