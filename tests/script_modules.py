"""Load a script that lives outside the packages (a benchmark, the dashboard builder) as a
module, for the tests that check it still runs and says what the docs quote."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

__all__ = ["ROOT", "load_script"]

ROOT = Path(__file__).parents[1]


def load_script(path: Path) -> ModuleType:
    """The module of the script at ``path``, named for its file, run from the file as
    `python path` runs it (without its `__main__` part)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
