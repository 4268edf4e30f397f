"""search fts detail none: SQLite's FTS5 trigram table keeps which rows hold a run, not where

The search asks FTS5 only for single runs of three characters, all required
(`content_search._fts_query`), and tests every candidate with the one predicate of both engines
(`lower(body) LIKE`), so the positions FTS5 kept of each run (`detail=full`, 0019's default)
were never read. With `detail=none` it keeps only the rows each run is on: writing a tree's
parts into it costs about half, and a phrase is still found by its runs and tested. The table
is made again and rebuilt from `search_part` (external content: the text is kept once, there),
so every part stays searchable; on a large store that takes a while. The delete trigger of
0019 is kept: it names the table, not its options. PostgreSQL: nothing changes.

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-03
"""

from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_TABLE = (
    "CREATE VIRTUAL TABLE session_search_parts USING fts5("
    "body, content='search_part', content_rowid='id', tokenize='trigram'{detail})"
)
_REBUILD = "INSERT INTO session_search_parts(session_search_parts) VALUES ('rebuild')"


def _remake(detail: str) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.execute("DROP TABLE IF EXISTS session_search_parts")
    op.execute(_TABLE.format(detail=detail))
    op.execute(_REBUILD)


def upgrade() -> None:
    _remake(", detail=none")


def downgrade() -> None:
    _remake("")
