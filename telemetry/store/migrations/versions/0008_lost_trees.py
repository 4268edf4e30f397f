"""lost trees: a session tree octel could not archive in full, what was lost and why

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-30
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lost_tree",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("server", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("root_session_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("top_session_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("reason", sqlmodel.sql.sqltypes.AutoString(length=30), nullable=False),
        sa.Column("origin", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("sessions", sa.Integer(), nullable=False),
        sa.Column("messages", sa.Integer(), nullable=False),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("missing", sa.JSON(), nullable=True),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_lost_tree")),
    )
    op.create_index("ix_lost_tree_detected", "lost_tree", ["detected_at", "id"])
    op.create_index("ix_lost_tree_root", "lost_tree", ["root_session_id"])


def downgrade() -> None:
    op.drop_index("ix_lost_tree_root", table_name="lost_tree")
    op.drop_index("ix_lost_tree_detected", table_name="lost_tree")
    op.drop_table("lost_tree")
