"""Alembic environment: runs on the connection or URL that octel's `migrate` module passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import engine_from_config, pool
from sqlalchemy.engine import Engine
from sqlmodel import SQLModel

import telemetry.store.action_models  # registers the action and lease tables
import telemetry.store.alert_models  # the alert deliveries
import telemetry.store.archive_docs  # the archive documents table
import telemetry.store.live_models  # registers the live table too
import telemetry.store.lost_models  # and the lost-tree table
import telemetry.store.models  # registers the tables on the metadata
import telemetry.store.search_models  # the content index
import telemetry.store.spend  # noqa: F401  (and the daily spend summary)

config = context.config
target_metadata = SQLModel.metadata


def _include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    # Text-search structures made by hand in migrations 0002, 0016 and 0017 (FTS5 tables,
    # trigram indexes, SQLite's walk index) have no model; autogenerate must not drop them.
    if type_ == "table" and name and name.startswith("session_search"):
        return False
    return not (type_ == "index" and name and name.endswith(("_trgm", "_text_walk", "_text_trigrams")))


def _configure(connection: object) -> None:
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        include_object=_include_object,
        render_as_batch=True,  # SQLite alters tables by copy-and-move
        compare_type=True,
    )


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if isinstance(connection, Engine):  # pytest-alembic hands over an engine
        with connection.connect() as conn:
            _configure(conn)
            with context.begin_transaction():
                context.run_migrations()
        return
    if connection is not None:
        _configure(connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = engine_from_config(
        config.get_section(config.config_ini_section, {}),
        prefix="sqlalchemy.",
        poolclass=pool.NullPool,
    )
    with engine.connect() as conn:
        _configure(conn)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()
else:
    run_migrations_online()
