"""Schema migrations, shipped inside the package and run by `octel db upgrade` and `octel serve`.

Every command that opens the store upgrades it first. A store already at the newest revision
is told by one query against the head read from the migration files' own text, so a command
on an up-to-date store neither loads Alembic nor runs it (a third of a second at each start).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["alembic_config", "at_head", "current_revision", "head_revision", "script_heads", "upgrade"]

_HERE = Path(__file__).resolve().parent
_VERSIONS = _HERE / "migrations" / "versions"
# `revision = "0010"`, `down_revision = "0009"` (or None, or a tuple for a merge), as every
# migration file states them at its top level
_ASSIGN = re.compile(r"^(revision|down_revision)\s*(?::[^=\n]*)?=\s*(.+?)\s*$", re.M)


def alembic_config(url: str | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_HERE / "migrations"))
    if url:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def script_heads() -> set[str]:
    """The head revisions of the migration files, read from their text (no Alembic import):
    every revision no other file names as its ``down_revision``."""
    revisions: set[str] = set()
    below: set[str] = set()
    for path in _VERSIONS.glob("*.py"):
        for key, value in _ASSIGN.findall(path.read_text(encoding="utf-8")):
            got = ast.literal_eval(value)
            if key == "revision":
                revisions.add(str(got))
            elif got:
                below |= {got} if isinstance(got, str) else set(got)
    return revisions - below


def at_head(engine: Engine) -> bool:
    """The store's schema is at the newest revision (one query; False when it has none yet)."""
    heads = script_heads()
    try:
        with engine.connect() as conn:
            stored = {str(r[0]) for r in conn.exec_driver_sql("SELECT version_num FROM alembic_version")}
    except DBAPIError:  # no version table: a new store
        return False
    return bool(heads) and stored == heads


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the store's schema to `revision` (idempotent)."""
    if revision == "head" and at_head(engine):
        return
    from alembic import command

    cfg = alembic_config()
    # A write transaction from its first statement (BEGIN IMMEDIATE on SQLite): two processes
    # upgrading a new store at once (`octel serve` and `octel watch` started together) queue
    # on the busy timeout, and the second finds the schema done, where a read lock upgraded
    # mid-migration fails at once with "database is locked".
    with engine.execution_options(octel_write=True).begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, revision)


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()
