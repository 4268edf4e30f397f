"""Which agent wrote each archived session, and the cost its CLI reported.

`session_index.source` is `opencode` or `claude_code` (every row before this is OpenCode's).
A Claude Code root also keeps the cost the CLI reported (`reported_cost_usd`), whether octel's
own figure for the tree differs from it (`cost_mismatch`) and the models the price table does
not know (`unpriced_models`), so a cost is never silently $0.

Plain `add_column` (no batch copy-and-move): on SQLite a rebuild of `session_index` would drop
the text-search triggers of migration 0002.

Revision ID: 0006
Revises: 0003
Create Date: 2026-11-30
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "session_index",
        sa.Column(
            "source", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False, server_default="opencode"
        ),
    )
    op.add_column("session_index", sa.Column("reported_cost_usd", sa.Float(), nullable=True))
    op.add_column(
        "session_index", sa.Column("cost_mismatch", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.add_column(
        "session_index",
        sa.Column("unpriced_models", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=True),
    )
    op.create_index("ix_session_index_source_archived", "session_index", ["source", "archived_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_session_index_source_archived", table_name="session_index")
    for name in ("unpriced_models", "cost_mismatch", "reported_cost_usd", "source"):
        op.drop_column("session_index", name)
