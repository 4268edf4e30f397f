"""A seeded store (captured runs archived and indexed, a small fleet) and a client on it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parent))  # tests/web/console_seed.py

from browser_harness import browser, live, phone, shots, ui  # noqa: F401  (the browser fixtures)
from console_seed import Store, build_store
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from web.app import create_app


@pytest.fixture
def live_child() -> Iterator[int]:
    """A live child process standing in for a dispatcher busy with a long worker."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield p.pid
    finally:
        p.kill()
        p.wait()


@pytest.fixture
def store(settings: Settings, live_child: int) -> Store:
    migrate_by_copy(settings.db_url)
    return build_store(settings, live_child)


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store.settings)) as c:
        yield c
