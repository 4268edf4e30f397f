"""live sessions: the OpenCode generation and version of the server each row came from

A watcher follows 1.x and 2.x servers side by side; each live row names which its server runs
(`generation` 1 or 2, `server_version` as the server's probe said it). Rows from before carry
neither.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("live_session", schema=None) as batch_op:
        batch_op.add_column(sa.Column("generation", sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column("server_version", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("live_session", schema=None) as batch_op:
        batch_op.drop_column("server_version")
        batch_op.drop_column("generation")
