"""The archive store the settings name (`OCTEL_ARCHIVE_STORE`): the archive folder, or the
database behind ``engine``. Every reader and writer of archive documents gets its store here."""

from __future__ import annotations

from sqlalchemy.engine import Engine

from archiver.store import ArchiveStore, FolderStore
from telemetry.settings import Settings
from telemetry.store.archive_docs import DatabaseStore

__all__ = ["archive_store"]


def archive_store(settings: Settings, engine: Engine) -> ArchiveStore:
    """A new store object (a writer needs its own: the database store holds what it puts
    until its transaction)."""
    if settings.archive_store_kind == "database":
        # files written before the switch stay readable (never removed by `doctor --repair`)
        folder = settings.archives
        fallback = FolderStore(folder, settings.archive_max_bytes) if folder.is_dir() else None
        return DatabaseStore(engine, settings.archive_max_bytes, fallback=fallback)
    return FolderStore(settings.archives, settings.archive_max_bytes)
