"""What every table of the store shares: the metadata (its naming convention), the column
kinds (BIGINT counters, UTC timestamps, JSON) and the usage columns of the tables that sum spend.

Each table module imports this one, so a command that reads one table defines only that table.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, DateTime, Integer, MetaData
from sqlmodel import Field, SQLModel

__all__ = ["BIG", "NAMING", "Usage", "big", "counted", "json_column", "timestamp"]

# A naming convention makes Alembic's constraint names the same on SQLite and PostgreSQL.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
SQLModel.metadata = MetaData(naming_convention=NAMING)

# Token counts, byte sizes and durations in milliseconds pass 2**31 in a long-lived fleet:
# BIGINT on PostgreSQL (SQLite's INTEGER already holds 64 bits).
BIG = BigInteger().with_variant(Integer(), "sqlite")


def big(default: int = 0) -> Any:
    return Field(default=default, sa_type=BIG)


class Usage(SQLModel):
    """The usage columns of every table that sums spend (index rows, live rows, the daily
    summary): tokens by kind (`archiver.metrics.TOKEN_KINDS`) and cost."""

    tokens_input: int = big()
    tokens_output: int = big()
    tokens_reasoning: int = big()
    tokens_cache_read: int = big()
    tokens_cache_write: int = big()
    cost_usd: float = 0.0


def counted(default: float, big: bool = False) -> Any:
    if big:
        return Field(default=default, sa_type=BIG, sa_column_kwargs={"server_default": "0"})
    return Field(default=default, sa_column_kwargs={"server_default": "0"})


def timestamp(nullable: bool = False, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(DateTime(timezone=True), nullable=nullable, index=index))


def json_column() -> Any:
    return Field(default=None, sa_column=Column(JSON, nullable=True))
