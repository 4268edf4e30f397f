"""alert deliveries: a claim key, unique, so that one alert is sent once by a fleet of watchers

Before a delivery, a process writes its first channel's row (outcome ``sending``) with
`claim_key`: a digest of the alert's key and the id of the alert's last claimed row. Being
unique, two processes that read the same last row (two watchers raising the same fleet-day
budget alert, or a watcher restarted while the alert fires) cannot both claim the next
delivery. Rows from before, and the other channels' rows, carry no key.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.add_column(sa.Column("claim_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True))
        batch_op.create_index("ux_alert_delivery_claim", ["claim_key"], unique=True)


def downgrade() -> None:
    with op.batch_alter_table("alert_delivery", schema=None) as batch_op:
        batch_op.drop_index("ux_alert_delivery_claim")
        batch_op.drop_column("claim_key")
