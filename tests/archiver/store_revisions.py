"""Take a test's store to a given schema revision, up or down."""

from __future__ import annotations

from alembic import command
from sqlalchemy.engine import Engine

from telemetry.store import migrate

__all__ = ["to_revision"]


def to_revision(engine: Engine, revision: str, *, down: bool = False) -> None:
    """Upgrade the store to `revision`, or with `down` downgrade it there."""
    if not down:
        migrate.upgrade(engine, revision)
        return
    cfg = migrate.alembic_config()
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, revision)
