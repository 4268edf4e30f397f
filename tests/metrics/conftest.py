"""Make the metrics test helpers (and tests/realparts.py) importable by name."""

import sys
from pathlib import Path

for _p in (Path(__file__).parent, Path(__file__).parents[1]):
    if str(_p) not in sys.path:
        sys.path.append(str(_p))
