"""Archive and index Claude Code sessions: one tree, or every transcript under a config folder.

`import_claude` is incremental and idempotent. A state file in the data folder
(``claude_state``) keeps, per session, the size, modification time and inode of each of its
files when it was last archived; a re-run opens only the sessions whose files changed.
Archiving the same session again replaces its files and updates its one index row, so losing
the state file costs time, never a double count.

An import goes in batches: the trees of a batch are built and redacted, their files written
and fsynced and read back (``archiver.batch``), indexed in one transaction (``index_batch``),
and only then are the older files of those sessions (named by their index rows) removed and
the batch remembered in the state file (written every few seconds and at the end: a crash
costs time, never a double count). For a large folder worker processes do the first part and
write the files themselves (``archiver.claude.pool``); the folder is then fsynced once per
batch before it is indexed. A batch is indexed in a thread while the workers prepare the
next one; the CLI starts the workers before it opens the store (``claude_early``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Engine

from archiver.batch import Prepared
from archiver.claude.archive import prepare_claude_tree
from archiver.claude.layout import Found, SessionFiles, found_sessions
from archiver.claude.pool import Preparing, Target, prepared_trees, sync_written, workers_for
from archiver.claude.prices import use_price_file
from archiver.claude.resume import named_entry
from archiver.claude.tree import ClaudeTree
from archiver.redact import Redactor
from archiver.store import FolderStore
from telemetry.archive_store import archive_store
from telemetry.services.claude.grown import grown_trees
from telemetry.services.claude.state import (
    ROWS_SQL,
    STATE_FILE,
    ClaudeImportReport,
    SessionEntry,
    cleanup_days,
    key_of,
    load_state,
    plan,
    report_tree,
    save_state,
    state_names,
    store_identity,
)
from telemetry.services.claude.write import Writer, remove_replaced, write_prepared
from telemetry.services.index.index_batch import index_batch
from telemetry.services.index.search_catchup import index_now
from telemetry.services.redaction import redactor_for
from telemetry.settings import Settings
from telemetry.store.aggregates import coalesced
from telemetry.store.db import session_scope

if TYPE_CHECKING:  # the archiving API loads the OpenCode client and watcher: only when used
    from telemetry.archiving import ArchiveOutcome
    from telemetry.services.claude.early import EarlyStart

__all__ = [
    "ClaudeImportReport",
    "archive_claude",
    "import_claude",
    "watch_claude",
]

# archive files written, synced and indexed together (one transaction)
_BATCH = 256
# seconds between two writes of the state file during an import (and once at its end): each
# write is the whole file, a few hundred bytes per session; what a crash loses of it is time
_SAVE_EVERY = 5.0


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
    from telemetry.archiving import ArchiveOutcome

    outcome = ArchiveOutcome(tree.root_id)
    try:
        redactor = redactor_for(settings, secret_values)
        prepared = prepare_claude_tree(tree, redactor, label=label, compress=compress)
        outcome.result = prepared.result
        store = archive_store(settings, engine)
        write_prepared([prepared], store, compress=compress)
        if outcome.result.records:
            with session_scope(engine) as db:
                store.flush(db)  # the database store: documents in the index's transaction
                indexed = index_batch(
                    db,
                    outcome.result.records,
                    redactor=redactor,
                    redacted=True,
                    written=outcome.result.written,
                )
            outcome.indexed = indexed.stats
            outcome.result.write_errors += store.confirm()  # read back before anything counts
            index_now(settings, engine, redactor)
            remove_replaced(store, indexed.replaced.values())  # the index names the new ones now
    except Exception as exc:  # callers get an outcome, never an exception
        outcome.errors.append(f"{type(exc).__name__}: {exc}")
    return outcome


def import_claude(
    config_dir: Path,
    *,
    settings: Settings,
    engine: Engine,
    label: str | None = None,
    quiet_seconds: float = 0.0,
    progress: Callable[[int, int], None] | None = None,
    now: float | None = None,
    early: EarlyStart | None = None,
    reprice: bool = False,
    found: Found | None = None,
) -> ClaudeImportReport:
    """Archive every session under ``config_dir`` whose files changed since the last import.
    With ``quiet_seconds``, a session written to more recently than that is left for later.
    ``early``: workers started before the store was open (``claude_early``), taken over; the
    caller closes them. ``reprice``: every session is read again, whatever the state file says,
    so its costs are those of the prices in use now (new prices do that on their own).
    ``found``: ``find_sessions``' answer for ``config_dir`` (and what it reported) in this run,
    not looked for again."""
    use_price_file(settings.price_file)
    now = time.time() if now is None else now
    report = ClaudeImportReport(str(config_dir))
    state_path = settings.data_dir / STATE_FILE
    name = state_names(settings.redact_key)  # paths and ids are kept as digests, never as text
    store_id = store_identity(settings.db_url, name)
    state = {} if reprice else load_state(state_path, store_id, _rows(engine))
    if early is not None:
        found = early.sessions, early.skipped
    sessions, skipped = found if found is not None else found_sessions(config_dir)
    report.problems.extend(e.to_dict() for e in skipped)
    days = cleanup_days(config_dir)
    batch: list[tuple[str, list[list[Any]], str, Prepared]] = []  # the one being prepared
    store = archive_store(settings, engine)  # one writer for the whole import
    if isinstance(store, FolderStore):
        store.remove_stale()  # once per run: what writers that died left

    saved = [time.monotonic(), False]  # when the state file was last written; whether it is behind

    def flush(batch: list[tuple[str, list[list[Any]], str, Prepared]], last: bool = False) -> None:
        """Write, read back and index one batch of prepared trees, then remember it."""
        prepared = [p for *_, p in batch]
        if isinstance(store, FolderStore):  # what workers wrote: its renames made durable
            sync_written(prepared, store.folder)
        write_prepared(prepared, store)
        records = [r for *_, p in batch for r in p.result.records]
        replaced: dict[str, str] = {}
        if records:
            with session_scope(engine) as db, coalesced(db):
                store.flush(db)  # the database store: documents in the index's transaction
                written = [n for p in prepared for n in p.result.written]
                indexed = index_batch(db, records, redactor=redactor, redacted=True, written=written)
            report.problems.extend({"error_kind": "write", "message": m} for m in store.confirm())
            index_now(settings, engine, redactor)
            report.indexed_new += indexed.stats.new
            report.indexed_updated += indexed.stats.updated
            replaced = indexed.replaced
        remove_replaced(store, replaced.values())  # the index names the new documents now
        done: dict[str, SessionEntry] = {}
        for key, sig, sid, p in batch:
            if report_tree(report, p.result, sid, sig, days, now):
                # kept as the JSON the state file holds (read back, it is checked again)
                resume = dict(named_entry(p.resume, name)) if p.resume else None
                done[key] = SessionEntry(sig=sig, resume=resume)
        state.update(done)
        saved[1] = saved[1] or bool(done)
        due = last or time.monotonic() - saved[0] >= _SAVE_EVERY
        if due and (saved[1] or not state_path.exists()):
            save_state(state_path, store_id, _rows(engine), state)
            saved[:] = [time.monotonic(), False]

    todo = plan(report, sessions, state, days=days, now=now, name=name, quiet_seconds=quiet_seconds)
    sigs = {key: sig for _, key, sig in todo.todo}
    if not todo.todo:  # nothing changed: not even the redactor is built
        if progress is not None:
            progress(len(sessions), len(sessions))
        return report
    redactor = early.redactor if early is not None else redactor_for(settings)
    pending_files = 0
    whole: list[SessionFiles] = []  # sessions that cannot be resumed: read whole, in workers
    handed = early.keys if early is not None else set()  # read whole by the early workers
    rest = [t for t in todo.todo if t[1] not in handed]
    grown = grown_trees(
        rest, state, name, engine=engine, store=store, redactor=redactor, label=label, whole=whole
    )
    writer = Writer()  # a batch is indexed while the next one is prepared
    # with the archive folder, worker processes write the files of what they prepare
    target = Target(store.folder, store.max_bytes) if isinstance(store, FolderStore) else None
    pool = _lazy_pool(whole, redactor, label, target, early.pool if early is not None else None)
    trees = itertools.chain(_counted(grown, report), writer.after(pool))
    try:
        for i, (files, prepared) in enumerate(trees):
            if progress is not None:
                progress(report.sessions - len(todo.todo) + i, report.sessions)
            key = key_of(files, name)
            if (sig := sigs.get(key)) is None:
                continue  # handed over early, but this plan leaves it out: dropped unwritten
            batch.append((key, sig, files.session_id, prepared))
            pending_files += len(prepared.files) + len(prepared.result.written)
            if pending_files >= _BATCH:
                writer.start(flush, batch)
                batch, pending_files = [], 0
        writer.start(flush, batch, True)
    finally:
        writer.wait()  # also when the loop failed: no write is left running
    if progress is not None:
        progress(len(sessions), len(sessions))
    return report


def _counted(
    grown: Iterator[tuple[SessionFiles, Prepared]], report: ClaudeImportReport
) -> Iterator[tuple[SessionFiles, Prepared]]:
    for item in grown:
        report.resumed += 1
        yield item


def _lazy_pool(
    whole: list[SessionFiles],
    redactor: Redactor,
    label: str | None,
    target: Target | None,
    early: Preparing | None,
) -> Iterator[tuple[SessionFiles, Prepared]]:
    """The pool over ``whole``, started once the grown sessions have filled it (what the early
    workers were handed first)."""
    if early is not None:
        yield from early.results(whole, target)
        return
    workers = workers_for(len(whole))
    yield from prepared_trees(whole, redactor, label=label, workers=workers, target=target)


def _rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.exec_driver_sql(ROWS_SQL).scalar_one())


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
