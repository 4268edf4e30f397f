"""text search on PostgreSQL: a GIN index of every three characters of each title and label

A text search asks a text index for the sessions that may hold the text
(`telemetry/queries/session_search.py`). pg_trgm's indexes (migration 0002) split a text into
words and leave out the characters that span two words, so a phrase of common words ("crash
timeout memory", each word on 1 row in 5, the phrase on 1 in 4,200) could only be found by
intersecting long lists: 130-250 ms at 1,000,000 sessions. This index holds every run of three
characters of `lower(title)` and `lower(label)`, spaces and punctuation included, as SQLite's
FTS5 trigram table does, so the runs across two words ("h t", "t m": 1 row in 900 together) are
in it and the search asks for those. It needs no extension: `octel_trigrams` is plain SQL and
the index is GIN over a text array.

PostgreSQL only (SQLite has FTS5 since 0002). Building it computes every row's runs once (about
a minute and a half at 1,000,000 sessions on two busy cores; writes to `session_index` wait
meanwhile, so run `octel db upgrade` in a quiet minute), then samples the table's statistics for
the planner (a few seconds).

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# Not in the model (it exists on one engine only): migrations/env.py keeps autogenerate off it.
INDEX = "ix_session_index_text_trigrams"
# The distinct runs of three characters of a text; an empty array for NULL or a shorter text.
# IMMUTABLE: a function of its argument alone, as an index expression must be.
FUNCTION = """CREATE OR REPLACE FUNCTION octel_trigrams(t text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT coalesce(array_agg(DISTINCT substr(t, i, 3)), '{}'::text[])
  FROM generate_series(1, length(t) - 2) AS i
$$"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(FUNCTION)
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {INDEX} ON session_index USING gin "
            "((octel_trigrams(lower(title)) || octel_trigrams(lower(label))))"
        )
        # The search asks the planner how many rows hold a text's runs. Until ANALYZE reads the
        # new expression, it guesses 25 rows for any two runs: a word on 1 session in 5 was then
        # read whole from this index (220 ms a page instead of 7) until autovacuum came by.
        op.execute("ANALYZE session_index")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(f"DROP INDEX IF EXISTS {INDEX}")
        op.execute("DROP FUNCTION IF EXISTS octel_trigrams(text)")
