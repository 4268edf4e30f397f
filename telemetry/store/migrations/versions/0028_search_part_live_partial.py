"""search part live partial: the index of parts read from live messages holds those alone

`ix_search_part_live` (0023) indexed every `search_part` row's `live_message_id`, which is null
for every part read from an archive: nearly all of them. Asked for a session's archived parts
(`session_id IN (...) AND live_message_id IS NULL`: what the catch-up reads before it replaces
a session's parts, and what a prune of archived parts deletes), SQLite's planner took that
index for `IS NULL` and read every archived part of the store, at each batch, instead of the
session's own by `ix_search_part_session`. The index now holds the live parts alone (a partial
index, `WHERE live_message_id IS NOT NULL`), which is all it is read for (`live_message_id IN
(...)`, by the watcher), so the planner takes the session index, and the archived parts' nulls
are no longer written into it. Both engines.

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-04
"""

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_NAME = "ix_search_part_live"
_LIVE = sa.text("live_message_id IS NOT NULL")


def upgrade() -> None:
    op.drop_index(_NAME, table_name="search_part")
    op.create_index(_NAME, "search_part", ["live_message_id"], postgresql_where=_LIVE, sqlite_where=_LIVE)


def downgrade() -> None:
    op.drop_index(_NAME, table_name="search_part")
    op.create_index(_NAME, "search_part", ["live_message_id"])
