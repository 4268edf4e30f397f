"""search pending redacted: whether a queued session's document was written redacted by octel

The catch-up indexer redacted every document again before indexing it, because a file
imported where it lay (`octel import archives` inside the archive folder) is never rewritten
and may hold text no redactor has seen. `redacted` says the document the session's index row
names is one octel wrote itself, redacted, when the session was queued (a tree archived, a
Claude Code import): the catch-up reads its parts as they are. Every other row, and every
row queued before this revision, is false: redacted again, as before.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-03
"""

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("search_pending") as batch_op:
        batch_op.add_column(sa.Column("redacted", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("search_pending") as batch_op:
        batch_op.drop_column("redacted")
