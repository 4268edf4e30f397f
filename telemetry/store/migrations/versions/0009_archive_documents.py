"""Archive documents in the database, and 64-bit counts on PostgreSQL.

`archive_document` keeps one compressed archive document per session beside its
`session_index` row (`OCTEL_ARCHIVE_STORE=database`), under the name the folder store gives
its file. On PostgreSQL its `data` column is stored EXTERNAL: the documents are compressed
already, so TOAST should not try again.

Token counts, byte sizes and durations in milliseconds become BIGINT on PostgreSQL, where an
INTEGER stops at 2**31 (a subtree's tokens, a cache-read total, a long run's duration);
SQLite's INTEGER already holds 64 bits, so nothing is rebuilt there (a batch rebuild of
`session_index` would drop the text-search triggers of migration 0002).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_TOKENS = ("tokens_input", "tokens_output", "tokens_reasoning", "tokens_cache_read", "tokens_cache_write")
_BIG = {
    "session_index": (
        *_TOKENS,
        "subtree_tokens",
        *(f"counted_{c}" for c in _TOKENS),
    ),
    "agent_run": (
        "duration_ms",
        "duration_api_ms",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_creation_tokens",
    ),
    "live_session": _TOKENS,
}


def _widen(to: sa.types.TypeEngine, from_: sa.types.TypeEngine) -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, columns in _BIG.items():
        for column in columns:
            op.alter_column(table, column, type_=to, existing_type=from_)


def upgrade() -> None:
    op.create_table(
        "archive_document",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=False),
        sa.Column("codec", sqlmodel.sql.sqltypes.AutoString(length=10), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("stored_size", sa.BigInteger(), nullable=False),
        sa.Column("content_hash", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.Column("stored_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archive_document")),
        sa.UniqueConstraint("name", name=op.f("uq_archive_document_name")),
        sa.UniqueConstraint("session_id", name=op.f("uq_archive_document_session_id")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE archive_document ALTER COLUMN data SET STORAGE EXTERNAL")
    _widen(sa.BigInteger(), sa.Integer())


def downgrade() -> None:
    _widen(sa.Integer(), sa.BigInteger())
    op.drop_table("archive_document")
