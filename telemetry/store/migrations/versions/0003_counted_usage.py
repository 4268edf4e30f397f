"""What the counters already hold of each session's usage and findings.

`session_index.counted_*` is the highest token and cost value of a session ever counted into
`session_tokens_total` / `session_cost_usd_total`, so a re-archive that reads less (a failed
walk) and then more again never counts the same tokens twice. `counted_finding` lists each
(session, source, detector, verdict) counted into `findings_total`, so a finding that comes
and goes is counted once.

Plain `add_column` (no batch copy-and-move): on SQLite a rebuild of `session_index` would drop
the text-search triggers of migration 0002.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_COUNTED = (
    ("counted_tokens_input", "tokens_input", sa.Integer()),
    ("counted_tokens_output", "tokens_output", sa.Integer()),
    ("counted_tokens_reasoning", "tokens_reasoning", sa.Integer()),
    ("counted_tokens_cache_read", "tokens_cache_read", sa.Integer()),
    ("counted_tokens_cache_write", "tokens_cache_write", sa.Integer()),
    ("counted_cost_usd", "cost_usd", sa.Float()),
)


def upgrade() -> None:
    for name, _source, type_ in _COUNTED:
        op.add_column("session_index", sa.Column(name, type_, nullable=False, server_default="0"))
    # the counters hold at least each row's present values already
    op.execute("UPDATE session_index SET " + ", ".join(f"{name} = {source}" for name, source, _t in _COUNTED))
    op.create_table(
        "counted_finding",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("detector", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column("verdict", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_counted_finding")),
        sa.UniqueConstraint(
            "session_id", "source", "detector", "verdict", name="uq_counted_finding_session_verdict"
        ),
    )
    op.execute(
        "INSERT INTO counted_finding (session_id, source, detector, verdict) "
        "SELECT session_id, source, detector, verdict FROM finding"
    )


def downgrade() -> None:
    op.drop_table("counted_finding")
    for name, _source, _type in reversed(_COUNTED):
        op.drop_column("session_index", name)
