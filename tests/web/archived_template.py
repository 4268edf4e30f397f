"""The console tests' store with every captured run archived, archived once a process on SQLite
and copied for each test after (as `tests/store_templates.py` does for the migrated schema).

Archiving the captured runs (the walk, redaction, the detectors, the files, the index) took
2.4-3 s of CPU for each of the web tests that want the seeded store, most of their time. The
copy is the same store: the database and the data folder (archives and the redaction key) as
the archiver left them, before any time was moved or any cycle written. On SQLite the database
is a file copy; on PostgreSQL it is `CREATE DATABASE ... TEMPLATE` of the first store archived
on that server (the real archiving into a real PostgreSQL still runs, once per process).
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.engine import Engine, make_url

from telemetry.settings import Settings

__all__ = ["archived_copy"]

_template: Path | None = None  # holds db/ (the database file) and data/ (the data folder)
_PG_ARCHIVED = "octel_template_archived"
_pg_templates: dict[str, Path] = {}  # server (URL without the database) -> its data folder copy


def _files(db: Path) -> list[Path]:
    """The database file and any journal beside it."""
    return [p for p in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")) if p.exists()]


def archived_copy(settings: Settings, engine: Engine, archive: Callable[[], None]) -> None:
    """Bring the store of `settings` (at head, empty) to what `archive()` makes of it: by
    running it the first time a process asks, by copying what it made every later time."""
    global _template
    url = make_url(settings.db_url)
    if url.get_backend_name() == "postgresql" and url.database:
        _pg_copy(settings, engine, archive)
        return
    if url.get_backend_name() != "sqlite" or not url.database:
        archive()
        return
    db = Path(url.database)
    engine.dispose()  # no connection holds the file while it is read or replaced
    if _template is None:
        archive()
        engine.dispose()
        root = Path(tempfile.mkdtemp(prefix="octel-archived-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        (root / "db").mkdir()
        for f in _files(db):
            shutil.copy2(f, root / "db" / f.name.replace(db.name, "store.db"))
        # a database inside the data folder is kept once, under db/: a later store may keep its own elsewhere
        inside = db.parent.resolve() == Path(settings.data_dir).resolve()
        skip = shutil.ignore_patterns(db.name, f"{db.name}-*") if inside else None
        shutil.copytree(settings.data_dir, root / "data", ignore=skip)
        _template = root
        return
    for f in _files(db):
        f.unlink()
    for f in (_template / "db").iterdir():
        shutil.copy2(f, db.with_name(f.name.replace("store.db", db.name)))
    shutil.copytree(_template / "data", settings.data_dir, dirs_exist_ok=True)


def _pg_admin(db_url: str) -> str:
    return db_url.rsplit("/", 1)[0].replace("postgresql+psycopg://", "postgresql://") + "/postgres"


def _pg_clone(db_url: str, source: str, target: str) -> None:
    """`target` made anew as a copy of `source`, with no session left on either."""
    import psycopg

    with psycopg.connect(_pg_admin(db_url), autocommit=True) as conn:
        for name in (source, target):
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        conn.execute(f'DROP DATABASE IF EXISTS "{target}"')
        conn.execute(f'CREATE DATABASE "{target}" TEMPLATE "{source}"')


def _pg_copy(settings: Settings, engine: Engine, archive: Callable[[], None]) -> None:
    db_url = settings.db_url
    server, name = db_url.rsplit("/", 1)
    engine.dispose()
    data = _pg_templates.get(server)
    if data is None:
        archive()
        engine.dispose()
        _pg_clone(db_url, name, _PG_ARCHIVED)
        root = Path(tempfile.mkdtemp(prefix="octel-archived-pg-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        shutil.copytree(settings.data_dir, root / "data")
        _pg_templates[server] = root / "data"
        return
    _pg_clone(db_url, _PG_ARCHIVED, name)
    shutil.copytree(data, settings.data_dir, dirs_exist_ok=True)
