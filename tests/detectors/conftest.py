"""Make the detector test helpers and the corpus generator importable by name.

tests/ is on sys.path (for tests/realparts.py), and tests/detectors/ would then pass for a
namespace package called `detectors`, hiding the real one; import the real packages first.
"""

import importlib
import sys
from pathlib import Path

_TESTS = str(Path(__file__).parents[1])
_saved = list(sys.path)
sys.path[:] = [p for p in sys.path if p not in (_TESTS, "")]
for _name in ("detectors", "archiver", "telemetry"):
    if getattr(sys.modules.get(_name), "__file__", None) is None:
        sys.modules.pop(_name, None)
    importlib.import_module(_name)
sys.path[:] = _saved

for _p in (Path(__file__).parent, Path(__file__).parents[1] / "corpus"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
