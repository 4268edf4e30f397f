"""live messages: each followed session's messages so far, for its page before any archive

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "live_message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("server", sqlmodel.sql.sqltypes.AutoString(length=500), nullable=False),
        sa.Column("session_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("message_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=30), nullable=True),
        sa.Column("completed", sa.Boolean(), nullable=False),
        sa.Column("cut", sa.Boolean(), nullable=False),
        sa.Column("body", sa.JSON(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_live_message")),
        sa.UniqueConstraint(
            "server", "session_id", "message_id", name="uq_live_message_server_session_message"
        ),
    )
    op.create_index("ix_live_message_session_position", "live_message", ["session_id", "position"])


def downgrade() -> None:
    op.drop_index("ix_live_message_session_position", table_name="live_message")
    op.drop_table("live_message")
