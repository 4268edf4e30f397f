"""Archive and index Claude Code sessions: one tree, or every transcript under a config folder.

`import_claude` is incremental and idempotent. A state file in the data folder keeps, per
session, the size and modification time of each of its files when it was last archived; a
re-run opens only the sessions whose files changed (a session grows by appended lines, and its
archive is whole documents, so a changed session is read again from its start). Archiving the
same session again replaces its files and updates its one index row, so losing the state file
costs time, never a double count.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy.engine import Engine

from archiver.archive import ArchiveResult, remove_superseded
from archiver.claude.archive import archive_claude_tree
from archiver.claude.layout import SessionFiles, find_sessions, is_stream_json, load_tree, session_files
from archiver.claude.stream import tree_from_stream
from archiver.claude.tree import ClaudeTree
from archiver.files import write_atomic
from archiver.record import SessionRecord
from telemetry.archive_store import archive_store
from telemetry.archiving import ArchiveOutcome, redactor_for
from telemetry.services.indexing import index_records
from telemetry.settings import Settings
from telemetry.store.aggregates import coalesced
from telemetry.store.db import session_scope

__all__ = [
    "ClaudeImportReport",
    "archive_claude",
    "archive_run",
    "cleanup_days",
    "import_claude",
    "near_cleanup",
    "watch_claude",
]

STATE_FILE = "claude-import-state.json"
_DAY = 86_400.0
# warn this many days before Claude Code's cleanup would delete a transcript
_WARN_DAYS = 5
# sessions indexed in one transaction (and remembered in the state file together)
_BATCH = 200


@dataclass
class ClaudeImportReport:
    config_dir: str
    sessions: int = 0
    archived: int = 0
    unchanged: int = 0
    still_writing: int = 0
    files_written: int = 0
    indexed_new: int = 0
    indexed_updated: int = 0
    cost_mismatches: list[str] = field(default_factory=list)
    near_cleanup: list[str] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def archive_claude(
    tree: ClaudeTree,
    *,
    settings: Settings,
    engine: Engine,
    label: str | None = None,
    secret_values: Sequence[str] = (),
    compress: bool = False,
) -> ArchiveOutcome:
    """Archive and index one Claude Code tree; never raises."""
    outcome = ArchiveOutcome(tree.root_id)
    try:
        redactor = redactor_for(settings, secret_values)
        store = archive_store(settings, engine)
        outcome.result = archive_claude_tree(tree, store, redactor, label=label, compress=compress)
        if outcome.result.records:
            with session_scope(engine) as db:
                store.flush(db)  # the database store: documents in the index's transaction
                outcome.indexed = index_records(db, outcome.result.records, redactor=redactor)
            outcome.result.write_errors += store.confirm()
        remove_superseded(outcome.result)  # only once the index names the new documents
    except Exception as exc:  # callers get an outcome, never an exception
        outcome.errors.append(f"{type(exc).__name__}: {exc}")
    return outcome


def archive_run(
    text: str,
    session_id: str | None,
    *,
    claude_dir: Path,
    settings: Settings,
    engine: Engine,
    label: str | None = None,
) -> ArchiveOutcome | None:
    """Archive the conversation behind a CLI run: its transcript when ``claude_dir`` holds it
    (full usage, subagents' own files), else the stream-json text itself; None when there is
    neither (a ``--output-format json`` result whose transcript is elsewhere)."""
    data = text.encode()
    stream = tree_from_stream(data) if is_stream_json(data) else None
    if stream is not None and not any(s.messages for s in stream.sessions):
        stream = None if not stream.results else stream  # a bare result line: no conversation
    files = session_files(claude_dir, session_id or (stream.root_id if stream else ""))
    if files is not None:
        tree = load_tree(files)
        if stream is not None:
            tree.results = stream.results
        elif text.lstrip().startswith("{"):
            try:
                result = orjson.loads(data)
            except orjson.JSONDecodeError:
                result = None
            tree.results = [result] if isinstance(result, dict) else []
    elif stream is not None and any(s.messages for s in stream.sessions):
        tree = stream
    else:
        return None
    return archive_claude(tree, settings=settings, engine=engine, label=label)


def _signature(files: SessionFiles) -> list[list[Any]]:
    out: list[list[Any]] = []
    for p in files.paths():
        try:
            st = p.stat()
        except OSError:
            continue
        out.append([str(p), st.st_size, st.st_mtime_ns])
    return out


def _key(files: SessionFiles) -> str:
    return f"{files.project}/{files.session_id}"


def _load_state(path: Path) -> dict[str, Any]:
    try:
        state = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return state if isinstance(state, dict) else {}


def cleanup_days(config_dir: Path) -> int:
    """Claude Code's ``cleanupPeriodDays`` (30 when its settings do not say)."""
    try:
        conf = orjson.loads((config_dir / "settings.json").read_bytes())
        days = conf.get("cleanupPeriodDays") if isinstance(conf, dict) else None
    except (OSError, orjson.JSONDecodeError):
        days = None
    return days if isinstance(days, int) and not isinstance(days, bool) and days > 0 else 30


def near_cleanup(sig: Iterable[Sequence[Any]], days: int, now: float) -> bool:
    """The session was last written long enough ago that the CLI will soon delete it."""
    newest = max((int(s[2]) for s in sig), default=None)
    return newest is not None and now - newest / 1e9 > (days - _WARN_DAYS) * _DAY


def import_claude(
    config_dir: Path,
    *,
    settings: Settings,
    engine: Engine,
    label: str | None = None,
    quiet_seconds: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
    now: float | None = None,
) -> ClaudeImportReport:
    """Archive every session under ``config_dir`` whose files changed since the last import.
    With ``quiet_seconds``, a session written to more recently than that is left for later."""
    now = time.time() if now is None else now
    report = ClaudeImportReport(str(config_dir))
    state_path = settings.data_dir / STATE_FILE
    state = _load_state(state_path)
    sessions = find_sessions(config_dir)
    report.sessions = len(sessions)
    days = cleanup_days(config_dir)
    redactor = redactor_for(settings)
    store = archive_store(settings, engine)  # one writer for the whole import
    pending: list[SessionRecord] = []
    written: list[ArchiveResult] = []
    done: dict[str, list[list[Any]]] = {}

    def flush() -> None:
        """Index what was archived since the last flush in one transaction, then remember it."""
        if pending:
            with session_scope(engine) as db, coalesced(db):
                store.flush(db)  # the database store: documents in the index's transaction
                stats = index_records(db, pending, redactor=redactor)
            report.problems.extend({"error_kind": "write", "message": m} for m in store.confirm())
            report.indexed_new += stats.new
            report.indexed_updated += stats.updated
            pending.clear()
        for result in written:  # the index names the new files now: the older ones can go
            remove_superseded(result)
        written.clear()
        if done or not state_path.exists():
            state.update(done)
            done.clear()
            os.makedirs(settings.data_dir, exist_ok=True)
            write_atomic(state_path, orjson.dumps(state))

    for i, files in enumerate(sessions):
        if progress is not None:
            progress(i, len(sessions))
        key, sig = _key(files), _signature(files)
        if state.get(key) == sig:
            report.unchanged += 1
            continue
        if quiet_seconds and any(now - s[2] / 1e9 < quiet_seconds for s in sig):
            report.still_writing += 1
            if near_cleanup(sig, days, now):
                report.near_cleanup.append(files.session_id)
            continue
        result = archive_claude_tree(load_tree(files), store, redactor, label=label)
        report.problems.extend(result.walk_errors)
        report.problems.extend({"error_kind": "write", "message": m} for m in result.write_errors)
        pending.extend(result.records)
        written.append(result)
        report.files_written += len(result.written)
        if result.write_errors:
            if near_cleanup(sig, days, now):
                report.near_cleanup.append(files.session_id)
            continue  # tried again next time
        report.archived += 1
        if any(r.cost_mismatch for r in result.records):
            report.cost_mismatches.append(files.session_id)
        done[key] = sig
        if len(pending) >= _BATCH:
            flush()
    flush()
    if progress is not None:
        progress(len(sessions), len(sessions))
    return report


async def watch_claude(
    config_dir: Path,
    stop: asyncio.Event,
    *,
    settings: Settings,
    engine: Engine,
    quiet_seconds: float = 30.0,
    interval: float = 5.0,
    label: str | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> int:
    """Follow ``config_dir`` until ``stop`` is set: archive each session once it has been quiet
    for ``quiet_seconds`` (and again after it grows); warn once about each session that nears
    Claude Code's cleanup age without an archive. Returns how many archive runs were made."""
    runs = 0
    warned: set[str] = set()
    log(f"following Claude Code transcripts in {config_dir} (Ctrl-C stops)")
    while not stop.is_set():
        report = await asyncio.to_thread(
            import_claude,
            config_dir,
            settings=settings,
            engine=engine,
            label=label,
            quiet_seconds=quiet_seconds,
        )
        runs += report.archived
        if report.archived:
            log(f"archived {report.archived} Claude Code sessions ({report.files_written} files)")
        for sid in report.near_cleanup:
            if sid not in warned:
                warned.add(sid)
                log(f"session {sid} nears Claude Code's cleanup age and is not archived yet")
        for p in report.problems:
            log(f"{p.get('error_kind')}: {p.get('path') or p.get('session_id')}: {p.get('message')}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=interval)
    log(f"stopped: {runs} Claude Code archive runs")
    return runs
