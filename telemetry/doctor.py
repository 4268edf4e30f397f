"""`octel doctor`: check that this octel instance can work, and say what to fix.

Each check returns `ok`, `warn` (works, but worth a look) or `fail` (something octel needs is
broken), a one-line detail and, unless ok, the fix. The engine and the HTTP client are passed
in; nothing here upgrades the schema or creates files. The OTLP endpoint is checked only when
trace export is set up (`OCTEL_OTEL_EXPORT`, or an `OTEL_EXPORTER_OTLP_…ENDPOINT` variable).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import SQLAlchemyError

from archiver.urls import without_credentials
from telemetry.doctor_check import Check
from telemetry.doctor_servers import opencode_checks
from telemetry.otel_export.probe import export_configured, probe_endpoint
from telemetry.queries.live_stale import following, no_watcher_reason
from telemetry.queries.lost import count_lost
from telemetry.services.index.archive_repair import check_index
from telemetry.services.spend.spend_repair import check_spend
from telemetry.settings import Settings
from telemetry.store.db import session_scope
from telemetry.store.migrate import current_revision, head_revision
from telemetry.timeutil import utcnow
from telemetry.token import TOKEN_FILE

__all__ = ["Check", "run_checks"]

_SECRET_FLOOR = 12


def _settings(s: Settings) -> Check:
    problems: list[str] = []
    globs = 0
    try:
        globs = len(s.heartbeat_globs)
    except ValueError as e:
        problems.append(str(e))
    short = [v for v in s.redact_values.split(",") if v.strip() and len(v.strip()) < _SECRET_FLOOR]
    if short:
        problems.append(
            f"{len(short)} OCTEL_REDACT_VALUES entries are shorter than {_SECRET_FLOOR} characters"
        )
    if s.redact_file is not None and not s.redact_file.is_file():
        problems.append(f"OCTEL_REDACT_FILE {s.redact_file} does not exist")
    if problems:
        return Check("settings", "fail", "; ".join(problems), "correct the OCTEL_* settings named above")
    detail = f"data folder {s.data_dir}, store {_safe_url(s.db_url)}, {globs} heartbeat file patterns"
    return Check("settings", "ok", detail)


def _safe_url(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)


def _missing_sqlite_file(url: str) -> Path | None:
    """The SQLite file a URL names when it does not exist (connecting would create it)."""
    u = make_url(url)
    if u.get_backend_name() != "sqlite" or not u.database or u.database == ":memory:":
        return None
    path = Path(u.database)
    return None if path.exists() else path


def _database(engine: Engine) -> list[Check]:
    url = engine.url.render_as_string(hide_password=True)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except SQLAlchemyError as e:
        reason = str(getattr(e, "orig", None) or e).strip().splitlines()[0]
        return [
            Check(
                "database",
                "fail",
                f"cannot connect to {url}: {reason}",
                "start the database or fix OCTEL_DATABASE_URL",
            ),
            Check("schema", "fail", "not checked: no database", "fix the database first"),
        ]
    db = Check("database", "ok", f"connected to {url}")
    try:
        current, head = current_revision(engine), head_revision()
    except SQLAlchemyError as e:
        return [db, Check("schema", "fail", f"cannot read the schema version: {e}", "run `octel db upgrade`")]
    if current is None:
        return [db, Check("schema", "fail", "the store has no octel schema yet", "run `octel db upgrade`")]
    if current != head:
        return [
            db,
            Check(
                "schema", "fail", f"schema at {current}, this octel needs {head}", "run `octel db upgrade`"
            ),
        ]
    return [db, Check("schema", "ok", f"schema at the newest revision {head}")]


def _folder(path: Path) -> Check:
    if path.exists():
        if not path.is_dir():
            return Check(
                "archive folder", "fail", f"{path} is not a folder", "point OCTEL_ARCHIVE_DIR at a folder"
            )
        if not os.access(path, os.W_OK | os.X_OK):
            return Check(
                "archive folder",
                "fail",
                f"{path} is not writable",
                f"give this user write access: chmod u+rwx {path}",
            )
        return Check("archive folder", "ok", f"{path} is writable")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and os.access(parent, os.W_OK | os.X_OK):
        return Check(
            "archive folder", "warn", f"{path} does not exist yet; it is created on first archive", ""
        )
    return Check(
        "archive folder",
        "fail",
        f"{path} does not exist and cannot be created",
        f"create it: mkdir -p {path}",
    )


def _archive_index(engine: Engine, s: Settings) -> Check:
    try:
        health = check_index(engine, s)
    except (SQLAlchemyError, OSError) as e:
        return Check(
            "archive index", "fail", f"cannot check the index: {e}", "check the store and the folder"
        )
    problems = []
    if health.missing:
        first = health.missing[0][1]
        problems.append(
            f"{len(health.missing)} of {health.rows} index rows name a document that is not in the "
            f"archive store, {s.archive_store_kind} (first: {first})"
        )
    if health.stale_parts:
        problems.append(f"{health.stale_parts} temporary .part files in the archive folder")
    if problems:
        return Check(
            "archive index",
            "fail" if health.missing else "warn",
            "; ".join(problems),
            "run `octel doctor --repair`",
        )
    if health.in_folder:
        return Check(
            "archive index",
            "warn",
            f"{health.in_folder} of {health.rows} index rows name a file of the archive folder, not a "
            "document in the database (written before OCTEL_ARCHIVE_STORE=database); they are read "
            "from the folder",
            f"run `octel import archives {s.archives}` to move them into the database",
        )
    where = "file in the archive folder" if s.archive_store_kind == "files" else "document in the database"
    return Check("archive index", "ok", f"{health.rows} index rows, each with its {where}")


def _lost(engine: Engine) -> Check:
    try:
        with session_scope(engine, write=False) as db:
            lost = count_lost(db, utcnow() - timedelta(days=7))
    except SQLAlchemyError as e:
        return Check("lost trees", "fail", f"cannot read the lost trees: {e}", "run `octel db upgrade`")
    if lost:
        what = f"{lost} session trees in the last 7 days were not archived in full"
        return Check("lost trees", "warn", what, "see what was lost and why: `octel lost --since 7d`")
    return Check("lost trees", "ok", "every tree seen in the last 7 days was archived in full")


def _watchers(engine: Engine) -> Check | None:
    """Which servers a watcher follows; a warning naming each one nobody follows whose live rows
    are left (they read unknown). None when no watcher ever followed a server under a lease."""
    try:
        with session_scope(engine, write=False) as db:
            f = following(db, utcnow())
    except SQLAlchemyError as e:
        return Check("watchers", "fail", f"cannot read the watchers' leases: {e}", "run `octel db upgrade`")
    if f.stale:
        what = "; ".join(
            f"nobody follows {s} ({no_watcher_reason(since)}, {n} live sessions read unknown)"
            for s, since, n in f.stale[:5]
        )
        more = f"; and {len(f.stale) - 5} more" if len(f.stale) > 5 else ""
        return Check("watchers", "warn", what + more, "start `octel watch --server URL` for each")
    if not f.followed:
        return None
    return Check("watchers", "ok", f"a watcher follows {', '.join(f.followed[:5])}")


def _followed(engine: Engine) -> list[str]:
    try:
        with session_scope(engine, write=False) as db:
            f = following(db, utcnow())
    except SQLAlchemyError:
        return []  # said by the watchers check
    return f.followed + [s for s, _e, _n in f.stale]


def _spend(engine: Engine) -> Check:
    try:
        with session_scope(engine, write=False) as db:
            health = check_spend(db)
    except SQLAlchemyError as e:
        return Check("spend summary", "fail", f"cannot read the spend summary: {e}", "run `octel db upgrade`")
    if health.wrong:
        first = health.wrong[0]
        what = f"{len(health.wrong)} daily spend groups differ from their sessions (first: {first})"
        return Check("spend summary", "fail", what, "run `octel doctor --repair`")
    if health.wrong_trees:
        first = health.wrong_trees[0]
        what = f"{len(health.wrong_trees)} roots' kept tree costs differ from their trees (first: {first})"
        return Check("spend summary", "fail", what, "run `octel doctor --repair`")
    return Check(
        "spend summary",
        "ok",
        f"{health.groups} daily spend groups and every tree cost equal to their sessions",
    )


def _token(s: Settings) -> Check:
    if s.ingest_token is not None and s.ingest_token.get_secret_value():
        return Check("ingest token", "ok", "set by OCTEL_INGEST_TOKEN")
    path = s.data_dir / TOKEN_FILE
    if not path.exists():
        return Check(
            "ingest token", "warn", f"{path} does not exist yet; `octel serve` creates it (mode 0600)"
        )
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        return Check(
            "ingest token", "fail", f"{path} has mode {mode:04o}; others can read it", f"chmod 600 {path}"
        )
    return Check("ingest token", "ok", f"{path} has mode {mode:04o}")


def run_checks(
    settings: Settings,
    engine_factory: Callable[[str], Engine],
    client: httpx.Client,
) -> list[Check]:
    """Every check, in a fixed order; none raises."""
    checks = [_settings(settings)]
    followed: list[str] = []  # every server a watcher follows, or followed
    missing = _missing_sqlite_file(settings.db_url)
    if missing is not None:
        checks += [
            Check(
                "database", "fail", f"no store at {missing} yet", "run `octel db upgrade` (or `octel serve`)"
            ),
            Check("schema", "fail", "not checked: no store", "run `octel db upgrade`"),
        ]
    else:
        engine = engine_factory(settings.db_url)
        try:
            checks += _database(engine)
            if checks[-1].status == "ok":
                checks += [_archive_index(engine, settings), _lost(engine), _spend(engine)]
                checks += [c for c in [_watchers(engine)] if c is not None]
                followed = _followed(engine)
        finally:
            engine.dispose()
    if settings.archive_store_kind == "files":
        checks.append(_folder(settings.archives))
    else:
        checks.append(Check("archive store", "ok", "archive documents are kept in the database"))
    checks += opencode_checks(settings, client, followed)
    if export_configured(settings):  # no line for a feature nobody set up
        checks.append(Check("otlp endpoint", *probe_endpoint(client)))
    checks.append(_token(settings))
    # a URL given as user:pass@host is shown without its credentials, whichever check names it
    clean = without_credentials
    return [Check(c.name, c.status, clean(c.detail), clean(c.fix)) for c in checks]
