"""Each app holds its state in one typed `AppState` (`web.app_state.app_state`): what the
settings decide from the start, what needs the store once the lifespan has opened it, and what
a module makes on first use, made once for that app and never shared with another."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fastapi.testclient import TestClient

from telemetry.settings import Settings
from web.app import create_app
from web.app_state import app_state


def test_the_store_is_there_once_the_app_serves_and_not_before(settings: Settings) -> None:
    app = create_app(settings)
    state = app_state(app)
    assert state.settings is settings
    assert getattr(state, "engine", None) is None  # the lifespan opens the store
    with TestClient(app):
        assert state.engine.url.render_as_string(hide_password=False) == settings.db_url
        assert state.ingest_token == "test-token-0123456789"
        assert state.group_commit is not None and state.redactor is not None


class _Made:
    pass


def test_what_a_module_makes_is_made_once_an_app_whichever_thread_asks(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, _env_file=None)  # type: ignore[call-arg]
    state, other = app_state(create_app(settings)), app_state(create_app(settings))
    calls: list[int] = []
    start = threading.Barrier(8)

    def make() -> _Made:
        calls.append(1)
        time.sleep(0.05)  # long enough for every other thread to ask meanwhile
        return _Made()

    found: list[_Made] = []

    def ask() -> None:
        start.wait()
        found.append(state.made(_Made, make))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(f is found[0] for f in found)
    assert other.made(_Made, make) is not found[0]  # another app's own
