"""Every archiver module exports exactly the public names it defines in `__all__`."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import archiver

MODULES = sorted(m.name for m in pkgutil.iter_modules(archiver.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_are_public(name: str) -> None:
    mod = importlib.import_module(f"archiver.{name}")
    exported = getattr(mod, "__all__", None)
    assert exported, f"archiver.{name} has no __all__"
    for item in exported:
        assert hasattr(mod, item), f"archiver.{name}.__all__ names missing {item}"
        assert not item.startswith("_")
