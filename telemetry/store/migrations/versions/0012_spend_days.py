"""spend per day: the Costs page reads a summary, not every session of its window

`spend_day` holds per UTC day, source, agent, model and driver the token sums, cost and
session count (`telemetry/store/spend.py`); writers keep it in the same transaction as the
index rows they change. `session_index.driver` keeps each session's driver (the newest cycle
its cycle id, label, own id or root id names), so the summary is not a lookup in the cycle
table per session. Both are filled here from what the store holds.

`ix_session_index_created` serves the part of a window that is not whole days: a session
counts at its creation (its archiving, already indexed, when the server did not say).
`ix_session_index_cost` lets the most expensive sessions of a window be read from the dearest
down instead of sorting every session of the window.

Plain `add_column` (no batch copy-and-move): on SQLite a rebuild of `session_index` would drop
the text-search triggers of migration 0002.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01
"""

import json

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_TOKENS = ("input", "output", "reasoning", "cache_read", "cache_write")


def _newest(match: str) -> str:
    return f"(SELECT c.driver FROM cycle c WHERE {match} ORDER BY c.started_at DESC, c.id DESC LIMIT 1)"


_DRIVER = "COALESCE({}, {}, {}, {})".format(
    _newest("c.cycle_id = session_index.cycle_id"),
    _newest("c.cycle_id = session_index.label"),
    _newest("c.session_id = session_index.session_id"),
    _newest("c.session_id = session_index.root_session_id"),
)


def _backfill() -> None:
    bind = op.get_bind()
    op.execute(f"UPDATE session_index SET driver = {_DRIVER}")
    at = "COALESCE(created_at, archived_at)"
    day = (
        f"to_char(timezone('UTC', {at}), 'YYYY-MM-DD')"
        if bind.dialect.name == "postgresql"
        else f"strftime('%Y-%m-%d', {at})"
    )
    source = "CASE WHEN source = 'claude_code' THEN 'claude' ELSE 'opencode' END"
    sums = ", ".join(f"SUM(tokens_{k})" for k in _TOKENS)
    rows = bind.execute(
        sa.text(
            f"SELECT {day} AS d, {source} AS s, agent, model, driver, {sums}, SUM(cost_usd), COUNT(*) "
            f"FROM session_index GROUP BY 1, 2, 3, 4, 5"
        )
    ).all()
    table = sa.table(
        "spend_day",
        *(sa.column(c) for c in ("key", "day", "source", "agent", "model", "driver", "cost_usd", "count")),
        *(sa.column(f"tokens_{k}") for k in _TOKENS),
    )
    values = [
        {
            "key": json.dumps([d, s, agent, model, driver], separators=(",", ":")),
            "day": d,
            "source": s,
            "agent": agent,
            "model": model,
            "driver": driver,
            **{f"tokens_{k}": int(v or 0) for k, v in zip(_TOKENS, rest[:5], strict=True)},
            "cost_usd": float(rest[5] or 0.0),
            "count": int(rest[6]),
        }
        for d, s, agent, model, driver, *rest in rows
    ]
    for i in range(0, len(values), 5000):
        bind.execute(table.insert(), values[i : i + 5000])


def upgrade() -> None:
    op.add_column(
        "session_index", sa.Column("driver", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True)
    )
    big = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "spend_day",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=False),
        sa.Column("day", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(length=20), nullable=False),
        sa.Column("agent", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        sa.Column("model", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column("driver", sqlmodel.sql.sqltypes.AutoString(length=100), nullable=True),
        *(sa.Column(f"tokens_{k}", big, nullable=False) for k in _TOKENS),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_spend_day")),
        sa.UniqueConstraint("key", name=op.f("uq_spend_day_key")),
    )
    op.create_index("ix_spend_day_day", "spend_day", ["day"], unique=False)
    op.create_index("ix_session_index_created", "session_index", ["created_at"], unique=False)
    op.create_index("ix_session_index_cost", "session_index", ["cost_usd", "id"], unique=False)
    _backfill()


def downgrade() -> None:
    op.drop_index("ix_session_index_cost", table_name="session_index")
    op.drop_index("ix_session_index_created", table_name="session_index")
    op.drop_index("ix_spend_day_day", table_name="spend_day")
    op.drop_table("spend_day")
    op.drop_column("session_index", "driver")
