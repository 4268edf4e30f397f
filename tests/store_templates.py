"""Stores already at the newest schema, copied from one migrated template instead of migrated
one by one.

Running every migration took 0.2-0.4 s of CPU on SQLite and several seconds of a busy
PostgreSQL server, for each of the hundreds of tests that want a store at head. Each test
process migrates one template per backend, with the real `upgrade`, and every later store is
a copy of it: a file copy on SQLite, `CREATE DATABASE ... TEMPLATE` on PostgreSQL. The copy is
then at head, so the `upgrade` a test or the app still runs on it is the one-query check.
Migrating from an empty store is what tests/foundation/test_migrations.py and the tests on
`store_url` itself do.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

from sqlalchemy.engine import make_url

from telemetry.store.db import make_engine
from telemetry.store.migrate import upgrade

__all__ = ["migrate_by_copy"]

_PG_TEMPLATE = "octel_template_head"
_sqlite_template: Path | None = None
_pg_servers: set[str] = set()  # servers (URL without the database) holding a template


def _sqlite_head() -> Path:
    global _sqlite_template
    if _sqlite_template is None:
        root = Path(tempfile.mkdtemp(prefix="octel-template-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        path = root / "head.db"
        engine = make_engine(f"sqlite:///{path}")
        upgrade(engine)
        engine.dispose()  # the last connection closed: the WAL is folded into the file
        _sqlite_template = path
    return _sqlite_template


def _pg_admin(url: str) -> str:
    return url.rsplit("/", 1)[0].replace("postgresql+psycopg://", "postgresql://") + "/postgres"


def _pg_head(url: str) -> str:
    import psycopg

    server = url.rsplit("/", 1)[0]
    if server not in _pg_servers:
        with psycopg.connect(_pg_admin(url), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{_PG_TEMPLATE}"')
            conn.execute(f'CREATE DATABASE "{_PG_TEMPLATE}"')
        engine = make_engine(f"{server}/{_PG_TEMPLATE}")
        upgrade(engine)
        engine.dispose()  # a template must have no connection when it is copied
        _pg_servers.add(server)
    return _PG_TEMPLATE


def migrate_by_copy(url: str) -> None:
    """Make the store at `url` a copy of the migrated template; a store that already holds a
    schema (a SQLite file with content, a PostgreSQL database with tables) is left alone."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if not parsed.database or parsed.database == ":memory:" or parsed.database.startswith("file:"):
            return
        path = Path(parsed.database)
        if path.exists() and path.stat().st_size > 0:
            return
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(_sqlite_head(), path)
        os.chmod(path, 0o600)
        return
    import psycopg

    template = _pg_head(url)
    name = parsed.database
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    if tables and tables[0]:
        return
    with psycopg.connect(_pg_admin(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}"')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
