"""Make the archiver test helpers (and tests/realparts.py) importable by name.

With tests/ on sys.path, a test folder such as tests/detectors/ could be taken for the
`detectors` package (a namespace package found before the editable install's finder), so
the real packages are imported first, with tests/ out of the way.
"""

import importlib
import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent


def _real_packages() -> None:
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _TESTS.resolve()]
    try:
        for name in ("detectors", "archiver", "telemetry"):
            mod = sys.modules.get(name)
            if mod is not None and getattr(mod, "__file__", None) is None:
                del sys.modules[name]
            importlib.import_module(name)
    finally:
        sys.path[:] = saved


_real_packages()
for _p in (_HERE, _TESTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
