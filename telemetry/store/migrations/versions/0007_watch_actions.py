"""watch actions and leases: the audit trail of `octel watch`'s rules, and which watcher
follows which server

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "watch_action",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("server", _S(length=500), nullable=False),
        sa.Column("session_id", _S(length=200), nullable=False),
        sa.Column("root_session_id", _S(length=200), nullable=True),
        sa.Column("rule", _S(length=40), nullable=False),
        sa.Column("action", _S(length=20), nullable=False),
        sa.Column("outcome", _S(length=20), nullable=False),
        sa.Column("detail", _S(length=1000), nullable=False),
        sa.Column("evidence", sa.JSON(), nullable=True),
        sa.Column("answer_status", sa.Integer(), nullable=True),
        sa.Column("answer", _S(length=1000), nullable=True),
        sa.Column("watcher", _S(length=200), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_watch_action")),
    )
    with op.batch_alter_table("watch_action", schema=None) as batch_op:
        batch_op.create_index("ix_watch_action_at", ["at", "id"], unique=False)
        batch_op.create_index("ix_watch_action_session_at", ["session_id", "at", "id"], unique=False)
    op.create_table(
        "watch_lease",
        sa.Column("server", _S(length=500), nullable=False),
        sa.Column("holder", _S(length=200), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_watch_lease")),
    )


def downgrade() -> None:
    op.drop_table("watch_lease")
    with op.batch_alter_table("watch_action", schema=None) as batch_op:
        batch_op.drop_index("ix_watch_action_session_at")
        batch_op.drop_index("ix_watch_action_at")
    op.drop_table("watch_action")
