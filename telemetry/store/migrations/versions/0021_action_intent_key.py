"""watch actions: the intent's key, unique per server, written before the request

A watcher writes the audit row of an action (outcome ``sending``) before its request leaves and
updates it with the outcome after, so what it did outlives it. `intent_key` names the intent
(``ask:<request id>``, ``abort:<session>:<run>``, ...); being unique per server, two watchers
can never both record, and so send, the same intent. Rows from before carry no key.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("watch_action", schema=None) as batch_op:
        batch_op.add_column(sa.Column("intent_key", sqlmodel.sql.sqltypes.AutoString(length=300), nullable=True))
        batch_op.create_index("ux_watch_action_server_key", ["server", "intent_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("watch_action", schema=None) as batch_op:
        batch_op.drop_index("ux_watch_action_server_key")
        batch_op.drop_column("intent_key")
