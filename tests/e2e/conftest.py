"""Fixtures for end-to-end tests against a real `opencode serve` and the scripted fake LLM: the
server and the fake (``opencode_fixtures``), a store of the test's own, and a watcher following
the server into it (``watch_thread``)."""

import sys
from pathlib import Path

_HERE = Path(__file__).parent
_TESTS = _HERE.parent


for _p in (_HERE, _TESTS):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import functools  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402
from opencode_fixtures import fake_llm, opencode, opencode_binary  # noqa: E402, F401
from opencode_harness import OpenCode  # noqa: E402
from watch_thread import Store, Watch, new_store, watching  # noqa: E402


@pytest.fixture
def octel_store(tmp_path: Path) -> Iterator[Store]:
    """A fresh SQLite store and archive folder under ``tmp_path / "data"``."""
    store = new_store(tmp_path / "data")
    yield store
    store.engine.dispose()


@pytest.fixture
def watch(opencode: OpenCode, octel_store: Store) -> Watch:  # noqa: F811 (the fixture imported above)
    """``with watch(**kw) as store:`` follows the test's `opencode serve` into ``octel_store``
    until the block ends (``watch_thread.watching``); the store outlives the watcher."""
    return functools.partial(watching, octel_store, opencode.url)
