"""search fts set based: the FTS5 text of new parts written a statement per batch, not per row

On SQLite the insert trigger of 0019 (`session_search_parts_ai`) put each new `search_part`
row's text into the FTS5 table a statement per row: about three quarters of what the catch-up
indexer paid. The one writer of `search_part` rows (`content_index._insert`) now puts the text
of the ids it wrote in one `INSERT INTO session_search_parts(rowid, body) SELECT ...`, a third
of the time, so the trigger goes. The delete trigger stays: every delete still takes the row's
text out of the FTS5 table, whoever deletes. Nothing already indexed changes, so a store with
data stays searchable as it is. PostgreSQL: nothing changes.

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-03
"""

from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

_INSERT_TRIGGER = """CREATE TRIGGER session_search_parts_ai AFTER INSERT ON search_part BEGIN
     INSERT INTO session_search_parts(rowid, body) VALUES (new.id, new.body);
   END"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TRIGGER IF EXISTS session_search_parts_ai")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute(_INSERT_TRIGGER)
