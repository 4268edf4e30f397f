"""`octel import claude` run as a user runs it, and the session index rows it wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlmodel import select
from typer.testing import CliRunner

from cli import app
from telemetry.store.db import make_engine, session_scope
from telemetry.store.models import SessionIndex


def import_claude(cfg: Path, data: Path) -> tuple[dict[str, Any], list[SessionIndex]]:
    """Import the config folder `cfg` into a store in `data`: the `--json` report and the rows."""
    r = CliRunner().invoke(app, ["--data-dir", str(data), "import", "claude", str(cfg), "--json"])
    assert r.exit_code == 0, r.output
    engine = make_engine(f"sqlite:///{data / 'octel.db'}")
    try:
        with session_scope(engine, write=False) as db:
            rows = list(db.exec(select(SessionIndex)))
            db.expunge_all()
    finally:
        engine.dispose()
    return json.loads(r.output), rows
