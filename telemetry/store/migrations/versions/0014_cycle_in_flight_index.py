"""cycles in flight: a partial index holding the open cycles alone

`/metrics` and the health page read the cycles still in flight by driver (their count and the
oldest start). The index on (ended_at, driver) found them, then fetched each from the table:
at 10,000,000 cycles the 2,020 open ones lay on 2,000 pages spread over the table (450 ms cold
on PostgreSQL). A partial index on (driver, started_at, ended_at) WHERE ended_at IS NULL holds only the
open cycles with both columns, so the read never leaves the index, and it stays a few pages
however long the history. It replaces the old index, which every finish had to update too.

Building it reads the cycle table once (seconds at 10,000,000 cycles) and holds writes to
it meanwhile: run `octel db upgrade` in a quiet minute.

Revision ID: 0014
Revises: 0012
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None

_OPEN = sa.text("ended_at IS NULL")


def upgrade() -> None:
    op.create_index(
        "ix_cycle_in_flight",
        "cycle",
        ["driver", "started_at", "ended_at"],  # ended_at: SQLite's plan then covers the read
        unique=False,
        postgresql_where=_OPEN,
        sqlite_where=_OPEN,
    )
    op.drop_index("ix_cycle_open", table_name="cycle")


def downgrade() -> None:
    op.create_index("ix_cycle_open", "cycle", ["ended_at", "driver"], unique=False)
    op.drop_index("ix_cycle_in_flight", table_name="cycle")
