"""The first sessions of an import handed to worker processes before the store is open.

Opening the store (loading SQLAlchemy and the models, bringing the schema up to date) takes
about a second in which worker processes can already read transcripts. ``start_early`` plans
the import from the state file alone (as ``claude_state.unchanged_report`` does: SQLite only),
starts the workers and hands them the first sessions that will be read whole. They prepare
them but write nothing, since no file is written before the store is open: their bytes come
back and are written, read back and indexed with the first batch. ``import_claude`` then takes
the workers over and plans again with the store's own count; a session handed over early that
this plan leaves out is dropped unwritten.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from archiver.claude.layout import Found, SessionFiles, found_sessions
from archiver.claude.pool import Preparing, workers_for
from archiver.errors import WalkError
from archiver.redact import Redactor
from telemetry.services.claude.state import (
    STATE_FILE,
    ClaudeImportReport,
    cleanup_days,
    key_of,
    load_state,
    plan,
    resume_of,
    sqlite_path,
    sqlite_rows,
    state_names,
    store_identity,
)
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings

__all__ = ["EarlyStart", "start_early"]

# sessions handed over before the store is open: about what the workers prepare meanwhile
_EARLY = 512


@dataclass
class EarlyStart:
    pool: Preparing
    redactor: Redactor
    sessions: list[SessionFiles]  # every session found, as ``find_sessions`` gave them
    skipped: list[WalkError] = field(default_factory=list)  # what it reported
    keys: set[str] = field(default_factory=set)  # the sessions handed over

    def close(self) -> None:
        self.pool.close()


def start_early(
    config_dir: Path,
    settings: Settings,
    label: str | None,
    reprice: bool = False,
    found: Found | None = None,
) -> EarlyStart | None:
    """Workers already preparing the first sessions to read whole, or None (not SQLite, or
    too few sessions for workers). ``found``: ``find_sessions``' answer (and what it
    reported) for ``config_dir`` in this run, not looked for again."""
    if sqlite_path(settings.db_url) is None:
        return None
    rows = sqlite_rows(settings.db_url) or 0  # a store not made yet holds none
    name = state_names(settings.redact_key)
    state = (
        {}
        if reprice
        else load_state(settings.data_dir / STATE_FILE, store_identity(settings.db_url, name), rows)
    )
    sessions, skipped = found if found is not None else found_sessions(config_dir)
    report = ClaudeImportReport(str(config_dir))
    todo = plan(report, sessions, state, days=cleanup_days(config_dir), now=time.time(), name=name)
    whole = [f for f, key, _ in todo.todo if resume_of(state.get(key)) is None]
    workers = workers_for(len(whole))
    if not workers:
        return None
    redactor = redactor_for(settings)
    pool = Preparing(redactor, label, workers)
    first = whole[:_EARLY]
    pool.start(first)
    return EarlyStart(pool, redactor, sessions, skipped, {key_of(f, name) for f in first})
