"""A seeded store on SQLite and a helper that runs `octel` against it through CliRunner."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent.parent / "queries"))  # storeseed
sys.path.insert(0, str(Path(__file__).parent))  # octelrun

from octelrun import Octel
from store_templates import migrate_by_copy
from storeseed import seed_fleet

from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def octel(tmp_path: Path) -> Iterator[Octel]:
    """An empty store (upgraded) and the runner; wide terminal so tables do not wrap."""
    url = f"sqlite:///{tmp_path / 'data' / 'octel.db'}"
    migrate_by_copy(url)  # a copy of the migrated template; `upgrade` finds it at head
    eng = make_engine(url)
    upgrade(eng)
    yield Octel(tmp_path / "data", url, eng, CliRunner(env={"COLUMNS": "200", "NO_COLOR": "1"}))
    eng.dispose()


@pytest.fixture
def seeded(octel: Octel) -> Octel:
    seed_fleet(octel.engine)
    return octel


@pytest.fixture
def golden() -> Callable[[str, Any], None]:
    """Compare JSON with tests/cli/golden/NAME.json; OCTEL_UPDATE_GOLDEN=1 rewrites the file."""

    def check(name: str, data: Any) -> None:
        path = GOLDEN / f"{name}.json"
        text = json.dumps(data, indent=2, sort_keys=True) + "\n"
        if os.environ.get("OCTEL_UPDATE_GOLDEN") == "1":
            path.write_text(text, encoding="utf-8")
        assert path.exists(), f"no golden file {path}; run with OCTEL_UPDATE_GOLDEN=1 once and review it"
        assert json.loads(text) == json.loads(path.read_text(encoding="utf-8")), f"{name} differs from {path}"

    return check
