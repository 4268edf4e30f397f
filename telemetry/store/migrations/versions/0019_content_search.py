"""content search: every archived part's text, searchable on both engines

`search_part` holds one row per searchable part of each archived session (message text,
reasoning, a tool's name, input, output and error, a message's error), written from the
redacted archive document with the session's index row. The text index over it differs by
engine, as 0002's does over titles:

- SQLite: an FTS5 table with the trigram tokenizer (`session_search_parts`, external content,
  kept by triggers). Trigrams over unicode61: what an operator searches for is a substring with
  punctuation in it (`git push --force`, `.env`, `ECONNRESET:`, a path), which unicode61 splits
  into words and loses the punctuation of; trigrams find any substring of three characters or
  more, and the same rule (`lower(body) LIKE`) then holds on PostgreSQL.
- PostgreSQL: a pg_trgm GIN index of `lower(body)`, which `LIKE '%…%'` reads, when the
  extension can be had (otherwise search still works, by scanning).

Existing archives are indexed by `octel db reindex --search` (resumable), not here.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy import text

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_SQLITE_TRIGGERS = (
    """CREATE TRIGGER session_search_parts_ai AFTER INSERT ON search_part BEGIN
         INSERT INTO session_search_parts(rowid, body) VALUES (new.id, new.body);
       END""",
    """CREATE TRIGGER session_search_parts_ad AFTER DELETE ON search_part BEGIN
         INSERT INTO session_search_parts(session_search_parts, rowid, body)
           VALUES ('delete', old.id, old.body);
       END""",
)
PG_INDEX = "ix_search_part_body_trgm"


def upgrade() -> None:
    op.create_table(
        "search_part",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("session_id", sa.String(length=200), nullable=False),
        sa.Column("message_index", sa.Integer(), nullable=False),
        sa.Column("part_index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_part")),
    )
    op.create_index("ix_search_part_session", "search_part", ["session_id", "message_index"])
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE session_search_parts USING fts5("
            "body, content='search_part', content_rowid='id', tokenize='trigram')"
        )
        for trigger in _SQLITE_TRIGGERS:
            op.execute(trigger)
    elif bind.dialect.name == "postgresql":
        available = bind.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")).first()
        if available is None:
            return
        with bind.begin_nested() as sp:  # the privilege may be lacking: as in 0002
            try:
                bind.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
            except Exception:
                sp.rollback()
                return
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON search_part USING gin (lower(body) gin_trgm_ops)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in ("ai", "ad"):
            op.execute(f"DROP TRIGGER IF EXISTS session_search_parts_{name}")
        op.execute("DROP TABLE IF EXISTS session_search_parts")
    else:
        op.execute(f"DROP INDEX IF EXISTS {PG_INDEX}")
    op.drop_index("ix_search_part_session", table_name="search_part")
    op.drop_table("search_part")
