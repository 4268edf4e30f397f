"""alert deliveries: what was sent to Alertmanager and webhooks, when, and the answer

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_S = sqlmodel.sql.sqltypes.AutoString


def upgrade() -> None:
    op.create_table(
        "alert_delivery",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("alert_key", _S(length=300), nullable=False),
        sa.Column("kind", _S(length=40), nullable=False),
        sa.Column("severity", _S(length=20), nullable=False),
        sa.Column("state", _S(length=20), nullable=False),
        sa.Column("channel", _S(length=40), nullable=False),
        sa.Column("outcome", _S(length=20), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("answer", _S(length=500), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("summary", _S(length=1000), nullable=False),
        sa.Column("tree_id", _S(length=200), nullable=True),
        sa.Column("session_id", _S(length=200), nullable=True),
        sa.Column("cycle_id", _S(length=200), nullable=True),
        sa.Column("link", _S(length=1000), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_delivery")),
    )
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.create_index("ix_alert_delivery_sent_at", ["sent_at", "id"], unique=False)
        batch_op.create_index("ix_alert_delivery_key", ["alert_key", "sent_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.drop_index("ix_alert_delivery_key")
        batch_op.drop_index("ix_alert_delivery_sent_at")
    op.drop_table("alert_delivery")
