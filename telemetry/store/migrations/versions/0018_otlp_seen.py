"""otlp seen: the observations of Claude Code's telemetry already counted, a row each

The OTLP receiver counts each observation (an API request, a data point) once per run; the keys
it had counted lived in the run's JSON (`raw.seen`), a list rewritten and redacted again whole
with every export, and kilobytes per observation. They now live in `otlp_seen` as one 128-bit
digest per observation. The upgrade moves every run's list into the table and drops it from the
JSON. A downgrade drops the table and cannot give back the keys (only their digests were kept):
an export retried after it would count its batch once more.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

import hashlib
import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_RUNS = sa.table(
    "agent_run", sa.column("id", sa.Integer), sa.column("run_key", sa.String), sa.column("raw", sa.JSON)
)
_SEEN = sa.table("otlp_seen", sa.column("run_key", sa.String), sa.column("digest", sa.String))


def _digest(key: str) -> str:
    # Kept here, not imported: a migration must not change when the receiver's code does.
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


def _raw(value: Any) -> dict[str, Any]:
    got = json.loads(value) if isinstance(value, str) else value
    return got if isinstance(got, dict) else {}


def upgrade() -> None:
    op.create_table(
        "otlp_seen",
        sa.Column("run_key", sa.String(length=200), nullable=False),
        sa.Column("digest", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("run_key", "digest", name=op.f("pk_otlp_seen")),
    )
    bind = op.get_bind()
    runs = bind.execute(
        sa.select(_RUNS.c.id, _RUNS.c.run_key, _RUNS.c.raw).where(_RUNS.c.run_key.like("otel:%"))
    )
    for run_id, run_key, value in runs.all():
        raw = _raw(value)
        keys = raw.pop("seen", None)
        if not isinstance(keys, list):
            continue
        digests = sorted({_digest(str(k)) for k in keys})
        if digests:
            bind.execute(sa.insert(_SEEN), [{"run_key": run_key, "digest": d} for d in digests])
        bind.execute(sa.update(_RUNS).where(_RUNS.c.id == run_id).values(raw=raw))


def downgrade() -> None:
    op.drop_table("otlp_seen")
