"""cycle summary index: the cycles summary of a window reads one index, never the table

`cycles_summary` counts the cycles begun since a time by driver, terminal state and worker
outcome. With only (started_at, id) indexed, each of a day's ~100,000 cycles at fleet size is a
table row fetched by position (2.8 s on PostgreSQL at 10,000,000 cycles when they are spread
over the table); an index holding the four columns answers from the index alone (an index-only
scan on PostgreSQL, a covering index on SQLite).

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_cycle_started_outcome",
        "cycle",
        ["started_at", "driver", "terminal_state", "worker_outcome"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_cycle_started_outcome", table_name="cycle")
