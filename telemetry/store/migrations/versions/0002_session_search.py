"""Text search over session titles and labels that uses an index.

On SQLite: an FTS5 trigram table kept by triggers, so a substring search reads only matching
rows instead of walking every session. On PostgreSQL: trigram GIN indexes, when the pg_trgm
extension can be had (otherwise search still works, by scanning).

A later batch migration that rebuilds `session_index` on SQLite drops these triggers: it must
create them again (see `_SQLITE_TRIGGERS`).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from alembic import op
from sqlalchemy import text

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_SQLITE_TRIGGERS = (
    """CREATE TRIGGER session_search_ai AFTER INSERT ON session_index BEGIN
         INSERT INTO session_search(rowid, title, label) VALUES (new.id, new.title, new.label);
       END""",
    """CREATE TRIGGER session_search_ad AFTER DELETE ON session_index BEGIN
         INSERT INTO session_search(session_search, rowid, title, label)
           VALUES ('delete', old.id, old.title, old.label);
       END""",
    """CREATE TRIGGER session_search_au AFTER UPDATE OF title, label ON session_index BEGIN
         INSERT INTO session_search(session_search, rowid, title, label)
           VALUES ('delete', old.id, old.title, old.label);
         INSERT INTO session_search(rowid, title, label) VALUES (new.id, new.title, new.label);
       END""",
)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        op.execute(
            "CREATE VIRTUAL TABLE session_search USING fts5("
            "title, label, content='session_index', content_rowid='id', tokenize='trigram')"
        )
        op.execute("INSERT INTO session_search(session_search) VALUES ('rebuild')")
        for trigger in _SQLITE_TRIGGERS:
            op.execute(trigger)
    elif bind.dialect.name == "postgresql":
        available = bind.execute(text("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'")).first()
        if available is None:
            return
        # Creating an extension needs a privilege a fleet's octel user may lack: try it in a
        # savepoint and carry on without the indexes when it is refused.
        with bind.begin_nested() as sp:
            try:
                bind.execute(text("CREATE EXTENSION IF NOT EXISTS pg_trgm"))
            except Exception:
                sp.rollback()
                return
        for column in ("title", "label"):
            op.execute(
                f"CREATE INDEX IF NOT EXISTS ix_session_index_{column}_trgm "
                f"ON session_index USING gin (lower({column}) gin_trgm_ops)"
            )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for name in ("ai", "ad", "au"):
            op.execute(f"DROP TRIGGER IF EXISTS session_search_{name}")
        op.execute("DROP TABLE IF EXISTS session_search")
    elif bind.dialect.name == "postgresql":
        for column in ("title", "label"):
            op.execute(f"DROP INDEX IF EXISTS ix_session_index_{column}_trgm")
