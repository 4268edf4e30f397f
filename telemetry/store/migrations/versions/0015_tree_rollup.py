"""each root keeps its indexed tree's cost: the dearest trees of a window without a scan

The Costs page ranks the roots created in its window by the cost of their whole indexed tree
(every index row naming the root as its root). It summed every session of every root of the
window at each request (400 ms at 1,000,000 sessions). `session_index.tree_cost_usd`,
`tree_tokens` and `tree_session_count` keep those sums on the root's row
(`telemetry/store/tree_rollup.py`), and the partial index `ix_session_index_tree_cost` holds
the roots with a tree, dearest last, with their times, so the page reads the dearest few of
its window from the index. Filled here from what the store holds.

The page reads the sessions of the partial days at its window's edges (a "7d" window starts
mid-day) from the index by creation time; `ix_session_index_created_spend` replaces
`ix_session_index_created` with every column that read needs, so it never leaves the index
(on SQLite; on PostgreSQL as far as the visibility map allows) instead of visiting a table
page per session.

Plain `add_column` (no batch copy-and-move): on SQLite a rebuild of `session_index` would drop
the text-search triggers of migration 0002.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_SPEND_READ = [
    "created_at",
    "archived_at",
    "source",
    "agent",
    "model",
    "driver",
    "tokens_input",
    "tokens_output",
    "tokens_reasoning",
    "tokens_cache_read",
    "tokens_cache_write",
    "cost_usd",
]
_TREE_ROOTS = sa.text("parent_session_id IS NULL AND tree_session_count > 0")
_TOKENS = "tokens_input + tokens_output + tokens_reasoning + tokens_cache_read + tokens_cache_write"


def upgrade() -> None:
    big = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.add_column("session_index", sa.Column("tree_cost_usd", sa.Float(), server_default="0", nullable=False))
    op.add_column("session_index", sa.Column("tree_tokens", big, server_default="0", nullable=False))
    op.add_column(
        "session_index", sa.Column("tree_session_count", sa.Integer(), server_default="0", nullable=False)
    )
    op.execute(
        "UPDATE session_index SET tree_cost_usd = t.cost, tree_tokens = t.tokens, tree_session_count = t.n "
        f"FROM (SELECT root_session_id AS root, COALESCE(SUM(cost_usd), 0) AS cost, "
        f"COALESCE(SUM({_TOKENS}), 0) AS tokens, COUNT(*) AS n FROM session_index "
        "GROUP BY root_session_id) AS t WHERE session_index.session_id = t.root"
    )
    op.create_index(
        "ix_session_index_tree_cost",
        "session_index",
        ["tree_cost_usd", "id", "created_at", "archived_at"],
        unique=False,
        postgresql_where=_TREE_ROOTS,
        sqlite_where=_TREE_ROOTS,
    )
    op.create_index("ix_session_index_created_spend", "session_index", _SPEND_READ, unique=False)
    op.drop_index("ix_session_index_created", table_name="session_index")


def downgrade() -> None:
    op.create_index("ix_session_index_created", "session_index", ["created_at"], unique=False)
    op.drop_index("ix_session_index_created_spend", table_name="session_index")
    op.drop_index("ix_session_index_tree_cost", table_name="session_index")
    op.drop_column("session_index", "tree_session_count")
    op.drop_column("session_index", "tree_tokens")
    op.drop_column("session_index", "tree_cost_usd")
