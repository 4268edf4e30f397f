"""Fixtures for the OpenCode 2 tests: the project's fake OpenCode 2 server (``fake_server``)."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import FakeOpenCode2, serve


@pytest.fixture
def oc2() -> Iterator[FakeOpenCode2]:
    """A fake OpenCode 2 server on a loopback port, empty, with its own password."""
    with serve() as fake:
        yield fake
