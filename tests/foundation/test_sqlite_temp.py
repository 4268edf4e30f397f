"""SQLite keeps its temporary data (statement journals, sorts) in memory, not in /var/tmp."""

from __future__ import annotations

from pathlib import Path

from telemetry.store.db import make_engine


def test_every_sqlite_connection_keeps_temporary_data_in_memory(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'o.db'}")
    try:
        for _ in range(2):  # each pooled connection, not only the first
            with engine.connect() as conn:
                assert conn.exec_driver_sql("PRAGMA temp_store").scalar_one() == 2  # MEMORY
    finally:
        engine.dispose()
