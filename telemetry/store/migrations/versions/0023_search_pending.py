"""search pending: sessions whose content the catch-up indexer has still to read

The index writers no longer write `search_part` in their own transaction (the FTS insert made
archiving cost about twice as much); they put the session's id here, and the catch-up indexer
(`telemetry/services/index/search_catchup.py`) reads its redacted document and writes its parts
later, in batches. `tick` grows each time a session is queued again while it waits, so the
catch-up only takes a row off when no newer archive came in meanwhile. Every archived session
that has no parts yet (a store from before 0019) is queued here, so it is indexed in time.

`search_part.live_message_id` names the live message (`live_message.id`) a part was read from:
a live session's messages are searchable as they arrive, and their parts go with them (when
its tree is archived the watcher clears them, and the catch-up writes the archive's).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02
"""

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "search_pending",
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("queued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tick", sa.Integer(), nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("session_id", name=op.f("pk_search_pending")),
    )
    with op.batch_alter_table("search_part") as batch_op:
        batch_op.add_column(sa.Column("live_message_id", sa.BigInteger(), nullable=True))
        batch_op.create_index("ix_search_part_live", ["live_message_id"])
    op.execute(
        "INSERT INTO search_pending (session_id, queued_at, tick) "
        "SELECT DISTINCT session_id, CURRENT_TIMESTAMP, 0 FROM session_index s "
        "WHERE NOT EXISTS (SELECT 1 FROM search_part p WHERE p.session_id = s.session_id)"
    )


def downgrade() -> None:
    with op.batch_alter_table("search_part") as batch_op:
        batch_op.drop_index("ix_search_part_live")
        batch_op.drop_column("live_message_id")
    op.drop_table("search_pending")
