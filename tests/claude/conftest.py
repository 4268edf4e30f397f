"""Make the Claude test helpers (and tests/realparts.py) importable by name."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
for _p in (_HERE, _HERE.parent):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
