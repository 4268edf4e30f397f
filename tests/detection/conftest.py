"""Make the detector test helpers and the corpus generator importable by name.

(This folder is not called `detectors`: tests/ is on sys.path, and a folder of that name there
would pass for a namespace package and hide the real `detectors` from every test.)"""

import sys
from pathlib import Path

for _p in (Path(__file__).parent, Path(__file__).parents[1] / "corpus"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
