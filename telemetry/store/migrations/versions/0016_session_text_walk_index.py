"""text search walk: on SQLite, an index holding the key, title and label of every session

A text search first walks the newest sessions in time order and tests each title and label
(`telemetry/queries/session_search.py`). Through the index on (archived_at, id) alone, SQLite
read each row from the table to test it: 10,000 rows took 50-110 ms at 1,000,000 sessions. This
index holds (archived_at, id, title, label), so the walk never leaves it (10-25 ms); the table
is read only for the page's rows.

SQLite only. On PostgreSQL a B-tree entry must stay under ~2.7 kB and a title may be longer in
UTF-8; there the walk reads the table and is fast enough (the rows it reads stay cached).

Building it reads the table once (seconds at 1,000,000 sessions). A later batch migration that
rebuilds `session_index` on SQLite must create it again, as it must the triggers of 0002.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

# Not in the model (it exists on one engine only): migrations/env.py keeps autogenerate off it.
INDEX = "ix_session_index_text_walk"


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"CREATE INDEX IF NOT EXISTS {INDEX} ON session_index (archived_at, id, title, label)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(f"DROP INDEX IF EXISTS {INDEX}")
