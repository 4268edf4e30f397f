"""Fixtures shared by the whole suite: stores (SQLite and a real PostgreSQL), settings, the app."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine

# The real packages first: a test folder such as tests/archiver must never stand in for them.
import archiver  # noqa: F401
import detectors  # noqa: F401
import telemetry  # noqa: F401
import tower  # noqa: F401
import web  # noqa: F401

sys.path.append(str(Path(__file__).parent))  # tests/realparts.py, tests/pgserver.py, tests/liveserver.py

import pgserver
import quick
import reaper
from realparts import require
from store_templates import migrate_by_copy

from telemetry.settings import Settings
from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

FIXTURES = Path(__file__).parent / "fixtures"

# Starlette's TestClient sends `Host: testserver`; the server answers only the hosts it is told.
os.environ.setdefault("OCTEL_ALLOWED_HOSTS", "testserver")
# Tests that look at archive files keep the folder store on PostgreSQL too (where the default
# is the database); the database store's own tests ask for it by name
# (tests/archiver/test_database_store.py, the end-to-end test).
os.environ.setdefault("OCTEL_ARCHIVE_STORE", "files")


# No time limit on an example: speed is measured in benchmarks, never asserted in a test, and a
# busy host can take longer than hypothesis's 200 ms default on an example whose result is
# right (the tests that met it had each set `deadline=None`).
settings.register_profile("octel", deadline=None)
settings.load_profile("octel")


@settings(max_examples=1, database=None, suppress_health_check=list(HealthCheck))
@given(st.text(), st.integers())
def _draw_once(text: str, number: int) -> None:
    pass


def pytest_addoption(parser: pytest.Parser) -> None:
    quick.add_option(parser)


def pytest_configure(config: pytest.Config) -> None:
    """`--quick` selects the quick subset (tests/quick.py).

    Every server a harness starts dies with this run, however the run ends (tests/reaper.py).

    Under pytest-xdist the watchdog is the controller's: each worker inherits its list and
    adopts itself, so a run killed at the controller stops the workers and every server they
    started, whichever worker started it."""
    quick.select(config)
    reaper.start()
    if hasattr(config, "workerinput"):
        reaper.adopt(os.getpid())


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):  # this worker ends on its own: never signal its pid again
        reaper.release(os.getpid())


# What a test needs beyond Python: a marker of its own, a fixture that starts a real part, or a
# harness module that does. `realparts` marks them all; the quick subset the README names
# (`pytest --quick`, tests/quick.py) leaves them out.
_REAL_MARKS = {
    "postgres",
    "chromium",
    "prometheus",
    "opencode",
    "phoenix",
    "claude",
    "alertmanager",
    "ccusage",
}
_REAL_FIXTURES = {"pg_server", "opencode", "phoenix", "live", "claude_bin"}
_REAL_MODULES = (
    "browser_harness",
    "opencode_harness",
    "opencode_fixtures",
    "claude_cli",
    "phoenix_harness",
    "alertmanager_harness",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    sources: dict[Path, bool] = {}
    for item in items:
        path = Path(str(item.fspath))
        if path not in sources:
            text = path.read_text(errors="replace") if path.suffix == ".py" else ""
            sources[path] = any(f"import {m}" in text or f"from {m} " in text for m in _REAL_MODULES)
        marks = {m.name for m in item.iter_markers()}
        uses = set(getattr(item, "fixturenames", ()))
        if marks & _REAL_MARKS or uses & _REAL_FIXTURES or sources[path]:
            item.add_marker(pytest.mark.realparts)
    quick.mark_slow(items)
    quick.fewer_examples(config, items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """One draw before any test's: on its first draws in a fresh clone, hypothesis builds its
    table of Unicode characters and reads every local module loaded for constants to try (both
    cached in `.hypothesis/` after). That took 1.2-1.5 s inside whichever property test drew
    first, which then failed its `too_slow` health check (`pytest tests/metrics`, every time)."""
    _draw_once()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    require(pgserver.pg_binaries() is not None, "PostgreSQL (initdb, pg_ctl)", pgserver.HOW)
    with pgserver.postgres_server() as url:
        yield url


@pytest.fixture
def pg_url(pg_server: str) -> str:
    """A fresh database on the test PostgreSQL server."""
    return pgserver.create_database(pg_server)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'octel.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using this runs on SQLite and on a real PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'octel.db'}"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def engine(store_url: str) -> Iterator[Engine]:
    """The store at `store_url`, at the newest schema (a copy of the migrated template)."""
    migrate_by_copy(store_url)
    eng = make_engine(store_url)
    upgrade(eng)  # at head already: the one-query check
    yield eng
    eng.dispose()


@pytest.fixture
def settings(tmp_path: Path, store_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=store_url,
        ingest_token="test-token-0123456789",  # type: ignore[arg-type]
        search_catchup_seconds=0,  # each archive searchable once written: tests read it at once
        _env_file=None,  # type: ignore[call-arg]
    )


@pytest.fixture
def auth() -> dict[str, str]:
    return {"Authorization": "Bearer test-token-0123456789"}
