"""What ``octel import claude`` remembers between runs, and the cleanup age it warns about.

A state file in the data folder keeps, per session, the size, modification time and inode of
each of its files when it was last archived, and what a later run needs to read only what the
files gained since (``archiver.claude.resume``: offsets, fingerprints, counted usage; never
text). It names the store it belongs to (by the digest of its URL) and how many Claude Code
index rows that store held when it was written: the state of another store, or of a store
that holds fewer rows than it did (deleted, replaced by an older copy), is not trusted, and
every session is read again.

It holds no path text: a working directory (the project folder's name) or a file name can
hold a secret, and this file does not go through the redactor. Each session is kept under the
keyed digest of ``<project>/<session id>``, each file under the keyed digest of its full path,
the session and message ids a later run resumes by theirs (``resume.state_namer``, keyed
with the redaction key the archives' placeholders use, so a guessed path cannot be checked
against it). A path relative to the session's folder would not do: that part is made of
session, agent and run ids taken from file names, and a file can be named by anything. The
same folder gives the same digests, so an unchanged folder is still answered from this file
alone; a moved folder is read again, as it was when paths were kept.

This module loads nothing heavy (no SQLAlchemy, no archive writer): `octel import claude` on
an unchanged folder answers from it alone (``unchanged_report``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import orjson

from archiver.claude.archive import is_empty
from archiver.claude.layout import Found, SessionFiles, find_sessions
from archiver.claude.prices import price_key
from archiver.claude.resume import Namer, state_namer
from archiver.errors import WalkErrorDoc
from archiver.redact import RedactKeyError, load_key
from archiver.shape import RawJson

if TYPE_CHECKING:  # the archive writer is not loaded for an unchanged folder
    from archiver.archive import ArchiveResult

__all__ = [
    "ROWS_SQL",
    "STATE_FILE",
    "ClaudeImportReport",
    "Plan",
    "SessionEntry",
    "cleanup_days",
    "key_of",
    "load_state",
    "near_cleanup",
    "plan",
    "report_tree",
    "resume_of",
    "save_state",
    "signature",
    "sqlite_path",
    "sqlite_rows",
    "state_names",
    "store_identity",
    "unchanged_report",
]

STATE_FILE = "claude-import-state.json"
# 3: paths and ids kept as keyed digests (an older state, with paths, is not trusted)
_VERSION = 3
_DAY = 86_400.0
# warn this many days before Claude Code's cleanup would delete a transcript
_WARN_DAYS = 5
_PASSWORD = re.compile(r"(//[^:/@]*):[^@/]*@")


class WriteProblem(TypedDict):
    """A document the store could not write, among an import's problems."""

    error_kind: str
    message: str


@dataclass
class ClaudeImportReport:
    config_dir: str
    sessions: int = 0
    archived: int = 0
    unchanged: int = 0
    still_writing: int = 0
    # sessions whose files hold no conversation (malformed lines, bookkeeping only): not archived
    empty: int = 0
    files_written: int = 0
    indexed_new: int = 0
    indexed_updated: int = 0
    # sessions read from where their files stopped last time, not from their start
    resumed: int = 0
    cost_mismatches: list[str] = field(default_factory=list)
    near_cleanup: list[str] = field(default_factory=list)
    problems: list[WalkErrorDoc | WriteProblem] = field(default_factory=list)


class SessionEntry(TypedDict):
    """What the state file keeps of one session: its files' signature (``signature``) and
    where a later read resumes (``resume.named_entry``; None: read it whole)."""

    sig: list[list[Any]]
    resume: RawJson | None


def state_names(key_file: Path) -> Namer:
    """How the state names paths and ids: digests keyed with the redaction key at ``key_file``
    (``redact.load_key``: the key the redactor uses, made on first use)."""
    return state_namer(load_key(key_file))


def signature(files: SessionFiles, name: Namer) -> list[list[Any]]:
    """[path's name, size, mtime_ns, inode] of each file of a session: equal when none changed."""
    out: list[list[Any]] = []
    for p in files.paths():
        try:
            st = p.stat()
        except OSError:
            continue
        out.append([name(str(p)), st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def key_of(files: SessionFiles, name: Namer) -> str:
    return name(f"{files.project}/{files.session_id}")


def sqlite_path(db_url: str) -> Path | None:
    if not db_url.startswith("sqlite:///"):
        return None
    return Path(db_url.removeprefix("sqlite:///").split("?", 1)[0]).resolve()


def store_identity(db_url: str, name: Namer) -> str:
    """The store the state belongs to: the ``name`` of its URL without a password (a SQLite
    file's full path); a digest too, since a URL can carry a secret in its query."""
    path = sqlite_path(db_url)
    return name(f"sqlite:///{path}" if path is not None else _PASSWORD.sub(r"\1:***@", db_url))


# what the store must still hold for the state to be trusted
ROWS_SQL = "SELECT count(*) FROM session_index WHERE source = 'claude_code'"


def load_state(path: Path, store: str, rows: int) -> dict[str, SessionEntry]:
    """Each session's remembered entry (``sig``, ``resume``), or nothing when the file is
    missing, unreadable, of an older layout, of another store, of other prices, or of more
    index rows than the store now holds (``rows``)."""
    try:
        state = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(state, dict) or state.get("version") != _VERSION or state.get("store") != store:
        return {}
    if state.get("prices") != price_key():  # new prices (an upgrade, a price file): read all again
        return {}
    saved, sessions = state.get("rows"), state.get("sessions")
    if not isinstance(saved, int) or rows < saved or not isinstance(sessions, dict):
        return {}
    # an entry of another shape is left out: its session is read again, as it would be
    return {k: e for k, v in sessions.items() if (e := _entry(v)) is not None}


def _entry(v: object) -> SessionEntry | None:
    if not isinstance(v, dict) or not isinstance(sig := v.get("sig"), list):
        return None
    resume = v.get("resume")
    return SessionEntry(sig=sig, resume=resume if isinstance(resume, dict) else None)


def save_state(path: Path, store: str, rows: int, sessions: dict[str, SessionEntry]) -> None:
    from archiver.files import write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    state = {"version": _VERSION, "store": store, "prices": price_key(), "rows": rows, "sessions": sessions}
    write_atomic(path, orjson.dumps(state))


def sqlite_rows(db_url: str) -> int | None:
    """The store's Claude Code index rows, read with the standard library's SQLite (no
    SQLAlchemy); None for another engine or a file that cannot be read."""
    import sqlite3

    path = sqlite_path(db_url)
    if path is None or not path.is_file():
        return None
    try:
        db = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            return int(db.execute(ROWS_SQL).fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return None


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


@dataclass
class Plan:
    """What one run has to do: the sessions to read, with their key and signature."""

    todo: list[tuple[SessionFiles, str, list[list[Any]]]] = field(default_factory=list)


def resume_of(entry: object) -> Mapping[str, Any] | None:
    """Where a session's kept state says its read stopped; None when it must be read whole."""
    resume = entry.get("resume") if isinstance(entry, Mapping) else None
    return resume if isinstance(resume, Mapping) else None


def plan(
    report: ClaudeImportReport,
    sessions: Sequence[SessionFiles],
    state: Mapping[str, SessionEntry],
    *,
    days: int,
    now: float,
    name: Namer,
    quiet_seconds: float = 0.0,
) -> Plan:
    """Compare each session's files with the state (kept under ``name``): unchanged, still
    being written (with ``quiet_seconds``), or to read; counted into ``report``."""
    out = Plan()
    report.sessions = len(sessions)
    for files in sessions:
        key, sig = key_of(files, name), signature(files, name)
        entry = state.get(key)
        if entry is not None and entry["sig"] == sig:
            report.unchanged += 1
        elif quiet_seconds and any(now - s[2] / 1e9 < quiet_seconds for s in sig):
            report.still_writing += 1
            if near_cleanup(sig, days, now):
                report.near_cleanup.append(files.session_id)
        else:
            out.todo.append((files, key, sig))
    return out


def unchanged_report(
    config_dir: Path,
    data_dir: Path,
    db_url: str,
    key_file: Path,
    found: Found | None = None,
) -> ClaudeImportReport | None:
    """The report of an import that has nothing to do (every session's files as the state of
    this store remembers them), found without opening the store; None when there is work
    (or the redaction key at ``key_file`` is unusable: the import says why). ``found``: what
    ``find_sessions`` gave for ``config_dir`` (and reported) in this run, not looked for again."""
    rows = sqlite_rows(db_url)
    if rows is None or not (data_dir / STATE_FILE).is_file():
        return None
    try:
        name = state_names(key_file)
    except (OSError, RedactKeyError):
        return None
    state = load_state(data_dir / STATE_FILE, store_identity(db_url, name), rows)
    if not state:
        return None
    report = ClaudeImportReport(str(config_dir))
    days = cleanup_days(config_dir)
    sessions = found[0] if found is not None else find_sessions(config_dir)
    todo = plan(report, sessions, state, days=days, now=time.time(), name=name)
    return report if not todo.todo else None


def report_tree(
    report: ClaudeImportReport,
    result: ArchiveResult,
    session_id: str,
    sig: list[list[Any]],
    days: int,
    now: float,
) -> bool:
    """Count one tree of a flushed batch; whether it is done (no file failed)."""
    report.problems.extend(result.walk_errors)
    report.problems.extend({"error_kind": "write", "message": m} for m in result.write_errors)
    report.files_written += len(result.written)
    if is_empty(result):  # no conversation in its files: remembered, read again once they change
        report.empty += 1
        return True
    if result.write_errors or not result.records:  # not written, or could not be read at all
        if near_cleanup(sig, days, now):
            report.near_cleanup.append(session_id)
        return False  # tried again next time
    report.archived += 1
    if any(r.cost_mismatch for r in result.records):
        report.cost_mismatches.append(session_id)
    return True
