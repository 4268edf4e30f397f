"""Make the Claude test helpers (and tests/realparts.py) importable by name."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
# tests/archiver: its OpenCode fakes, for tests that set both sources side by side
for _p in (_HERE, _HERE.parent, _HERE.parent / "archiver"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
